/**
 * RunStore's typed errors: what a caller of the run store may have to handle besides a
 * `StoreFailure` (none of them means anything changed).
 */
import { Schema } from "effect"

export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", { runId: Schema.String }) {
  override get message() {
    return `workflow run ${this.runId} does not exist`
  }
}

/** The origin session already has a queued or active run (one active reservation per session). */
export class ReservationConflict extends Schema.TaggedError<ReservationConflict>()("ReservationConflict", {
  sessionId: Schema.String,
  runId: Schema.String,
  state: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} already has workflow run ${this.runId} (${this.state}); cancel it or wait for it to end`
  }
}

/** The runner's claim token no longer matches the row (taken over, parked, ended elsewhere): stop writing. */
export class ClaimLost extends Schema.TaggedError<ClaimLost>()("ClaimLost", {
  runId: Schema.String,
  operation: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: this runner no longer holds the run's claim (during ${this.operation})`
  }
}

/** A claim attempt found the run in a state it cannot be claimed from. */
export class ClaimRefused extends Schema.TaggedError<ClaimRefused>()("ClaimRefused", {
  runId: Schema.String,
  state: Schema.String,
  reason: Schema.Literal("terminal", "notQueued", "queued", "held", "delivering", "waiting")
}) {
  override get message() {
    const why = {
      terminal: "it has ended",
      notQueued: "it is not queued",
      queued: "it is still queued (activate it instead)",
      held: "another runner holds a live claim",
      delivering: "a successor message of the run is being delivered in its session right now",
      waiting: "it waits for an answer (/workflow answer, or the model's workflow answer)"
    }[this.reason]
    return `run ${this.runId} (${this.state}) cannot be claimed: ${why}`
  }
}

/** A request that the caller saw open was not open any more when the write ran. */
export class RequestNotOpen extends Schema.TaggedError<RequestNotOpen>()("RequestNotOpen", {
  requestId: Schema.String
}) {
  override get message() {
    return `request ${this.requestId} is no longer open`
  }
}
