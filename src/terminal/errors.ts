/** Typed refusals of the `restart` action and of a second launch in one terminal turn. */
import { Schema } from "effect"

export const RestartRefusal = Schema.Literal(
  "unknown",
  "active",
  "otherSession",
  "userCancelled",
  "agentCancelled",
  "sourceGone",
  "limit",
  "repeated",
  "alreadyRestarted"
)
export type RestartRefusal = typeof RestartRefusal.Type

/** `restart` was refused; nothing was written. `detail` says why in words the model can act on. */
export class RestartRefused extends Schema.TaggedError<RestartRefused>()("RestartRefused", {
  runId: Schema.String,
  reason: RestartRefusal,
  detail: Schema.String
}) {
  override get message() {
    return `cannot restart run ${this.runId}: ${this.detail}`
  }
}

/** The terminal turn already reserved its one launch (another tool call made it). */
export class LaunchAlreadyReserved extends Schema.TaggedError<LaunchAlreadyReserved>()(
  "LaunchAlreadyReserved",
  {
    terminalRunId: Schema.String,
    runId: Schema.String,
    kind: Schema.String
  }
) {
  override get message() {
    return (
      `this terminal turn (run ${this.terminalRunId}) already launched run ${this.runId} (${this.kind}); ` +
      "only one workflow launch is allowed per terminal turn. End the turn; the launched run starts after it."
    )
  }
}
