/**
 * A step's timeout is a durable deadline: when a run is taken over (its owner died or its lease
 * ran out), the visit the new runner starts for the step that was in flight continues that
 * visit, so its limit counts from when the *first* attempt of the step started (the step rows'
 * `started_at`), not from the takeover. Pure: no I/O, no clock reads.
 */
import type { StepRecord } from "../store/run-store.ts"

/** The `interrupted` reason a takeover writes on the attempt it closes (the durable marker). */
export const SUPERSEDED = "superseded: the run was taken over"

/** An attempt the takeover continues: superseded already, or still in flight (about to be). */
const continued = (step: StepRecord) =>
  step.interrupted === SUPERSEDED || (step.outcome === null && step.interrupted === null)

/**
 * When the visit of `nodeId` that a takeover continues started, in epoch milliseconds, or null
 * when the run does not continue a visit of that node (a fresh visit: its limit starts now).
 * Walks back over the trailing attempts of the node that earlier takeovers superseded, so a
 * chain of crashes never extends the deadline.
 */
export const deadlineOrigin = (steps: ReadonlyArray<StepRecord>, nodeId: string): number | null => {
  let origin: number | null = null
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]
    if (step === undefined || step.nodeId !== nodeId || !continued(step)) break
    const started = Date.parse(step.startedAt)
    if (Number.isFinite(started)) origin = started
  }
  return origin
}

/** What is left of a `timeoutMs` limit that started at `origin` (null: starts now), never negative. */
export const remainingMs = (timeoutMs: number, origin: number | null, now: number): number =>
  origin === null ? timeoutMs : Math.max(0, origin + timeoutMs - now)
