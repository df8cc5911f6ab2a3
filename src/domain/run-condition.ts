/**
 * The condition of a run as people are shown it: what the stored state means right now. A run
 * stored `running` is not always running: its owner may have parked it (session shutdown), the
 * user may hold it (Escape), its owner may be gone (no live claim), or its agent step may be
 * waiting for a model that ended its turn without `submit`. Pure: decided from the stored
 * fields (state, parked reason, pause and cancel requests, claim expiry against `now`, the open
 * request) and the count of step reminders sent, never from message text.
 *
 * The parked reason is a code for the parks this package makes (`SHUTDOWN_PARK`,
 * `USER_HOLD_REASON`); any other reason is a library caller's `Engine.park` text, shown clipped.
 */

/** Why a run is `waiting` after the user's Escape: durable, so the hold survives a restart. */
export const USER_HOLD_REASON = "the user interrupted the step (Escape)"

/** The parked reason of a run parked at session shutdown. */
export const SHUTDOWN_PARK = "shutdown"

/** Reminders an agent step gets at most per attempt (the passive notice after them is not one). */
export const MAX_STEP_REMINDERS = 2

/** The stored fields the condition is decided from (a `RunRecord` has them all). */
export interface RunConditionInput {
  readonly state: string
  readonly parkedReason: string | null
  readonly pauseRequested: boolean
  readonly cancelRequested: "agent" | "user" | null
  readonly claimToken: string | null
  readonly claimExpiresAt: number | null
  readonly openRequestId: string | null
  /** The open request of the waiting checkpoint the run stands at (absent: none). */
  readonly waitRequestId?: string | null
}

export type RunCondition =
  | { readonly _tag: "Queued" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Pausing" }
  | { readonly _tag: "Cancelling"; readonly by: "agent" | "user" }
  | { readonly _tag: "WaitingForAgent"; readonly reminder: number }
  /** At a waiting checkpoint: nothing runs until its answer or its deadline. */
  | { readonly _tag: "Waiting" }
  | { readonly _tag: "Parked"; readonly reason: string }
  | { readonly _tag: "Held" }
  | { readonly _tag: "Paused" }
  | { readonly _tag: "Orphaned" }
  | { readonly _tag: "Ended"; readonly state: string }

/** A claim whose lease has not ended at `now`. */
export const liveClaim = (run: RunConditionInput, now: number): boolean =>
  run.claimToken !== null && (run.claimExpiresAt ?? 0) > now

/**
 * The condition of `run` at `now`. `remindersSent`: step reminders sent for the attempt of its
 * open request (0 when unknown).
 */
export const runCondition = (run: RunConditionInput, now: number, remindersSent = 0): RunCondition => {
  switch (run.state) {
    case "queued":
      return { _tag: "Queued" }
    case "waiting":
      if ((run.waitRequestId ?? null) !== null) return { _tag: "Waiting" }
      return run.parkedReason === USER_HOLD_REASON ? { _tag: "Held" } : { _tag: "Paused" }
    case "running":
      break
    default:
      return { _tag: "Ended", state: run.state }
  }
  if (run.parkedReason === USER_HOLD_REASON) return { _tag: "Held" }
  if (run.parkedReason !== null) return { _tag: "Parked", reason: run.parkedReason }
  if (!liveClaim(run, now)) return { _tag: "Orphaned" }
  if (run.cancelRequested !== null) return { _tag: "Cancelling", by: run.cancelRequested }
  if (run.pauseRequested) return { _tag: "Pausing" }
  if (run.openRequestId !== null && remindersSent >= 1) {
    return { _tag: "WaitingForAgent", reminder: Math.min(remindersSent, MAX_STEP_REMINDERS) }
  }
  return { _tag: "Running" }
}

/** The longest parked reason shown in a label. */
const SHORT_REASON = 40

const shortReason = (reason: string): string => {
  const line = reason.replace(/\s+/g, " ").trim()
  return line.length <= SHORT_REASON ? line : `${line.slice(0, SHORT_REASON - 1)}…`
}

/** The condition in the words every view shows (CLI, `/workflow status`, the tool, the footer). */
export const conditionLabel = (condition: RunCondition): string => {
  switch (condition._tag) {
    case "Queued":
      return "queued"
    case "Running":
      return "running"
    case "Pausing":
      return "running (pause requested)"
    case "Cancelling":
      return `running (cancel requested by the ${condition.by})`
    case "WaitingForAgent":
      return `waiting for agent (reminder ${condition.reminder} of ${MAX_STEP_REMINDERS})`
    case "Waiting":
      return "waiting for an answer"
    case "Parked":
      return `parked (${shortReason(condition.reason)})`
    case "Held":
      return "held (Escape)"
    case "Paused":
      return "paused"
    case "Orphaned":
      return "orphaned (owner session gone)"
    case "Ended":
      return condition.state
  }
}

/** A run that needs someone to act before it moves again (the ones `doctor` flags when old). */
export const isStalled = (condition: RunCondition): boolean =>
  condition._tag === "Parked" || condition._tag === "Orphaned"

/** The condition as one machine-readable word (`--json`, filters): the tag, camel-cased. */
export const conditionKind = (condition: RunCondition): string =>
  condition._tag === "Ended"
    ? condition.state
    : `${condition._tag.charAt(0).toLowerCase()}${condition._tag.slice(1)}`
