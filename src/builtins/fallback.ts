/**
 * Autoimplement's timeout fallback: its decision and the validation of that decision against the
 * stage that timed out, and its budget, read from the run's history. Pure. The stages run in a
 * fixed order; a fallback may send the run back to any earlier stage, repeat the timed-out one,
 * or move on by exactly one stage when inspection shows the timed-out stage's work is done.
 * Anything further ahead would skip a required stage and is rejected with a message that names
 * it.
 */
import { Either, Schema } from "effect"
import type { VisitRecord } from "../engine/definition.ts"

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

/*
 * The timeout fallback's budget, read from the run's history (the durable step records): how
 * many fallbacks already ran, which stage just timed out, and every timeout so far. Pure. The
 * count is of finished fallback visits, so it does not depend on `maxSteps` and survives a
 * restart or takeover unchanged.
 */
export const MAX_FALLBACKS = 3
export const FALLBACK_NODE = "fallback"

export interface TimeoutRecord {
  readonly nodeId: string
  readonly attemptId: string
  readonly error: string | null
}

export interface FallbackSource extends TimeoutRecord {
  readonly nodeId: Stage
}

/** What the guard decides, and what the fallback and the blocked result are built from. */
export interface FallbackBudget {
  readonly next: "fallback" | "exhausted"
  readonly used: number
  readonly limit: number
  readonly source: FallbackSource
  readonly timeouts: ReadonlyArray<TimeoutRecord>
}

const timeoutOf = (visit: VisitRecord): TimeoutRecord => ({
  nodeId: visit.nodeId,
  attemptId: visit.attemptId,
  error: visit.error ?? null
})

export const timeoutsIn = (history: ReadonlyArray<VisitRecord>): ReadonlyArray<TimeoutRecord> =>
  history.filter((visit) => visit.outcome === "timed_out").map(timeoutOf)

export const fallbacksUsed = (history: ReadonlyArray<VisitRecord>): number =>
  history.filter((visit) => visit.nodeId === FALLBACK_NODE).length

/**
 * Called right after a stage timed out (the guard is only reached from `timed_out` cases): the
 * last finished visit is that stage. Throws when it is not, so a miswired graph fails loudly.
 */
export const budgetOf = (history: ReadonlyArray<VisitRecord>): FallbackBudget => {
  const last = history.at(-1)
  if (last === undefined || last.outcome !== "timed_out" || !isStage(last.nodeId)) {
    throw new Error(
      `the fallback guard expects a timed-out stage just before it, found ${last === undefined ? "nothing" : `"${last.nodeId}" (${last.outcome})`}`
    )
  }
  const used = fallbacksUsed(history)
  return {
    next: used < MAX_FALLBACKS ? "fallback" : "exhausted",
    used,
    limit: MAX_FALLBACKS,
    source: { ...timeoutOf(last), nodeId: last.nodeId },
    timeouts: timeoutsIn(history)
  }
}

export const GUARD_NODE = "fallbackGuard"

/** The budget as the latest guard visit saw it (the fallback and its route node read this). */
export const budgetAtGuard = (history: ReadonlyArray<VisitRecord>): FallbackBudget => {
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]?.nodeId === GUARD_NODE) return budgetOf(history.slice(0, i))
  }
  throw new Error("no fallback guard visit in this run")
}
