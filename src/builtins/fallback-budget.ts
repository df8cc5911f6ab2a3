/**
 * The timeout fallback's budget, read from the run's history (the durable step records): how
 * many fallbacks already ran, which stage just timed out, and every timeout so far. Pure. The
 * count is of finished fallback visits, so it does not depend on `maxSteps` and survives a
 * restart or takeover unchanged.
 */
import type { VisitRecord } from "../engine/definition.ts"
import { isStage, type Stage } from "./fallback-route.ts"

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
