/**
 * A scripted "model" for Autoimplement on the real engine: it takes each prompt the engine
 * delivers and answers, lets the stage time out (TestClock), or fails its delivery, as the
 * test's script says. Prompts and outcomes are recorded so tests assert the route taken.
 */
import { Effect, Option, TestClock } from "effect"
import type { NaturalMessage } from "../../src/delivery/coordinator.ts"
import { STAGE_LIMITS } from "../../src/builtins/autoimplement.ts"
import type { Stage } from "../../src/builtins/fallback.ts"
import { DEFAULT_TIMEOUT_MS } from "../../src/engine/timeout.ts"
import { type Harness, SESSION } from "../engine/support/harness.ts"

/** Long leases: a clock jump of hours then runs few renewals. */
export const LONG_LEASE = { leaseMs: 48 * 3_600_000, renewEveryMs: 24 * 3_600_000 }

export const HEAD = "1111111111111111111111111111111111111111"

/** A valid `ok` answer for every stage. */
export const OK: Readonly<Record<Stage | "fallback", unknown>> = {
  redesign: { plan: "new plan" },
  implement: { summary: "implemented", head: HEAD },
  verifyPlan: { checks: ["npm test"] },
  verifyRun: { passed: true, evidence: ["npm test: ok"] },
  publish: { branch: "work", head: HEAD, pullRequest: "1" },
  review: { verdict: "approve", head: HEAD, findings: [] },
  ci: { state: "passed", head: HEAD, evidence: ["build: ok"] },
  finalizeDelivery: { delivered: true, mergeCommit: "2222", report: "merged" },
  fallback: { route: "retry", reason: "work incomplete", evidence: ["git status: dirty"] }
}

export type Act =
  | { readonly _tag: "Submit"; readonly output: unknown }
  | { readonly _tag: "TimeOut" }
  | { readonly _tag: "Cancel" }

export const submit = (output: unknown): Act => ({ _tag: "Submit", output })
export const TIME_OUT: Act = { _tag: "TimeOut" }
export const CANCEL: Act = { _tag: "Cancel" }

/** Ok answers unless the script says otherwise; `visit` counts visits of that node from 1. */
export type Script = (nodeId: string, visit: number, prompt: string) => Act | undefined

export const limitOf = (nodeId: string): number => STAGE_LIMITS[nodeId as Stage] ?? DEFAULT_TIMEOUT_MS

const detail = (message: NaturalMessage, key: string) => String(message.message.details[key])

export interface Drive {
  /** Node IDs of the prompts, in order. */
  readonly prompts: ReadonlyArray<string>
  readonly texts: ReadonlyArray<string>
  readonly state: string
  readonly result: unknown
  readonly error: unknown
}

/** Answer prompts until the run's runner stops; returns what was asked and how it ended. */
export const drive = (h: Harness, runId: string, script: Script = () => undefined) =>
  Effect.gen(function* () {
    const prompts: Array<string> = []
    const texts: Array<string> = []
    const visits = new Map<string, number>()
    for (;;) {
      const next = yield* Effect.raceFirst(
        Effect.map(h.coordinator.take, Option.some),
        Effect.as(h.engine.await(runId), Option.none<NaturalMessage>())
      )
      if (Option.isNone(next)) break
      const message = next.value
      if (message.kind !== "workflowPrompt") continue
      const nodeId = detail(message, "nodeId")
      const visit = (visits.get(nodeId) ?? 0) + 1
      visits.set(nodeId, visit)
      prompts.push(nodeId)
      texts.push(typeof message.message.content === "string" ? message.message.content : "")
      const act = script(nodeId, visit, texts.at(-1) ?? "") ?? submit(OK[nodeId as Stage])
      switch (act._tag) {
        case "Submit":
          yield* h.engine.submit({
            sessionId: SESSION,
            requestId: detail(message, "requestId"),
            output: act.output
          })
          break
        case "TimeOut":
          yield* TestClock.adjust(limitOf(nodeId))
          break
        case "Cancel":
          yield* h.engine.cancel(runId, { by: "agent" })
          break
      }
    }
    const status = yield* h.engine.status(runId)
    return {
      prompts,
      texts,
      state: status.state,
      result: status.result,
      error: status.error,
      status
    } as Drive & {
      readonly status: typeof status
    }
  })

/** The happy path's prompts, in order (plan given at start). */
export const HAPPY = ["implement", "verifyPlan", "verifyRun", "publish", "review", "ci", "finalizeDelivery"]
