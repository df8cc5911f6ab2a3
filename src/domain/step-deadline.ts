/**
 * A step's deadline: its limit counted from when the visit it continues began. A takeover (the
 * owner died or its lease ran out) closes the attempt in flight as superseded and starts a new
 * attempt that continues the same visit, so the limit counts from the first attempt of that
 * chain, never from the takeover: a chain of crashes never extends it. A park or a hold ends
 * the visit instead (its attempt is interrupted, not superseded): the step's next attempt
 * starts a fresh limit. Pure, over the step records as stored (no clock reads).
 */

/** The `interrupted` reason a takeover writes on the attempt it closes (the durable marker). */
export const SUPERSEDED = "superseded: the run was taken over"

/** The stored fields of a step the deadline is decided from (a `StepRecord` has them all). */
export interface StepTiming {
  readonly nodeId: string
  readonly timeoutMs: number | null
  readonly outcome: string | null
  readonly interrupted: string | null
  readonly startedAt: string
}

/** Still in flight: no outcome, not interrupted. */
export const inFlight = (step: StepTiming): boolean => step.outcome === null && step.interrupted === null

/** An attempt a takeover continues: superseded already, or still in flight (about to be). */
const continued = (step: StepTiming) => step.interrupted === SUPERSEDED || inFlight(step)

/**
 * When the visit of `nodeId` that a takeover continues started, in epoch milliseconds, or null
 * when the run does not continue a visit of that node (a fresh visit: its limit starts now).
 * Walks back over the trailing attempts of the node that earlier takeovers superseded.
 */
export const deadlineOrigin = (steps: ReadonlyArray<StepTiming>, nodeId: string): number | null => {
  let origin: number | null = null
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]
    if (step === undefined || step.nodeId !== nodeId || !continued(step)) break
    const started = Date.parse(step.startedAt)
    if (Number.isFinite(started)) origin = started
  }
  return origin
}

/**
 * The deadline (epoch ms) of the step at `index` of `steps` (a run's steps in order): its limit
 * from the start of the earliest attempt it continues (the attempts of the same node right
 * before it that a takeover superseded), or null when it has no limit, its limit is not known
 * yet, or its start cannot be read.
 */
export const stepDeadline = (steps: ReadonlyArray<StepTiming>, index: number): number | null => {
  const step = steps[index]
  if (step === undefined || step.timeoutMs === null) return null
  let origin = Date.parse(step.startedAt)
  for (let i = index - 1; i >= 0; i--) {
    const before = steps[i]
    if (before === undefined || before.nodeId !== step.nodeId || before.interrupted !== SUPERSEDED) break
    const started = Date.parse(before.startedAt)
    if (Number.isFinite(started)) origin = started
  }
  return Number.isFinite(origin) ? origin + step.timeoutMs : null
}

/**
 * The deadline that still applies to a run: that of its step in flight (the last one), or null
 * when no step is in flight or it has no known limit. A parked or held run has none: its next
 * attempt starts a fresh limit.
 */
export const currentDeadline = (steps: ReadonlyArray<StepTiming>): number | null => {
  const last = steps.length - 1
  const step = steps[last]
  return step !== undefined && inFlight(step) ? stepDeadline(steps, last) : null
}
