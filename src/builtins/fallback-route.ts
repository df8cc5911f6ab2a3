/**
 * The timeout fallback's decision and its validation against the stage that timed out. Pure.
 * Autoimplement's stages run in a fixed order; a fallback may send the run back to any earlier
 * stage, repeat the timed-out one, or move on by exactly one stage when inspection shows the
 * timed-out stage's work is done. Anything further ahead would skip a required stage and is
 * rejected with a message that names it.
 */
import { Either, Schema } from "effect"

/** Agent stages in the order a run passes them. */
export const STAGES = [
  "redesign",
  "implement",
  "verifyPlan",
  "verifyRun",
  "publish",
  "review",
  "ci",
  "finalizeDelivery"
] as const
export type Stage = (typeof STAGES)[number]

export const ROUTES = ["retry", "verify", "review", "ci", "deliver", "replan", "blocked"] as const
export type FallbackRoute = (typeof ROUTES)[number]

const MAX_REASON = 2_000
const MAX_EVIDENCE = 20
const MAX_EVIDENCE_ITEM = 1_000

/** The fallback agent's bounded answer. */
export const FallbackDecision = Schema.Struct({
  route: Schema.Literal(...ROUTES),
  reason: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_REASON)),
  evidence: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_EVIDENCE_ITEM))).pipe(
    Schema.minItems(1),
    Schema.maxItems(MAX_EVIDENCE)
  )
})
export type FallbackDecision = typeof FallbackDecision.Type

/** Where each route (but `retry` and `blocked`) continues. */
const ROUTE_STAGE: Readonly<Record<Exclude<FallbackRoute, "retry" | "blocked">, Stage>> = {
  verify: "verifyPlan",
  review: "review",
  ci: "ci",
  deliver: "finalizeDelivery",
  replan: "redesign"
}

/** What each stage is, for messages. */
const STAGE_WORK: Readonly<Record<Stage, string>> = {
  redesign: "planning",
  implement: "implementation",
  verifyPlan: "verification",
  verifyRun: "verification",
  publish: "publication (commit, push, pull request)",
  review: "review",
  ci: "CI",
  finalizeDelivery: "delivery"
}

export const isStage = (value: string): value is Stage => (STAGES as ReadonlyArray<string>).includes(value)

const indexOf = (stage: Stage) => STAGES.indexOf(stage)

/** The stage a route continues at (`null` for `blocked`). */
export const targetOf = (source: Stage, route: FallbackRoute): Stage | null =>
  route === "blocked" ? null : route === "retry" ? source : ROUTE_STAGE[route]

/**
 * Whether `route` is safe after a timeout in `source`: `blocked`, `retry` and `replan` always
 * are; any other route may go back, or one stage forward (the timed-out stage's work is done
 * and the next stage checks it), never further.
 */
export const checkRoute = (source: Stage, route: FallbackRoute): Either.Either<Stage | null, string> => {
  const target = targetOf(source, route)
  if (target === null || route === "replan") return Either.right(target)
  const skipped = STAGES.slice(indexOf(source) + 1, indexOf(target))
  if (skipped.length === 0) return Either.right(target)
  const names = [...new Set(skipped.map((stage) => STAGE_WORK[stage]))].join(", ")
  return Either.left(
    `fallback route "${route}" is not allowed after a timeout in "${source}": it would skip ${names}`
  )
}

/** The routes `checkRoute` accepts for a source, for the fallback's prompt. */
export const allowedRoutes = (source: Stage): ReadonlyArray<FallbackRoute> =>
  ROUTES.filter((route) => Either.isRight(checkRoute(source, route)))
