/**
 * A run's ending as facts (the run row's `end_*` and `error_json` columns): what kind of end, who
 * ended it, where it stood, and why it ended badly. Decided by the code that ends the run, never
 * read back from a message; the restart policy and every reason kind read these.
 */
import { Schema } from "effect"

/**
 * How a run ended, as facts the ending code states (never read back from a message): completed
 * (its last step), failed (a node failed, or the run stood at a node the loaded workflow lacks),
 * maxSteps (its step budget used up), timedOut (a node's time limit), cancelled (by the agent or
 * the user), launchFailed (activation refused the queued run before any node ran),
 * controllerInterrupted (the workflow controller stopped it).
 */
export const EndKind = Schema.Literal(
  "completed",
  "failed",
  "maxSteps",
  "timedOut",
  "cancelled",
  "launchFailed",
  "controllerInterrupted"
)
export type EndKind = typeof EndKind.Type

/** Who ended a run: the engine (the run's own course, or a refused launch), the agent, the user, the controller. */
export const EndBy = Schema.Literal("engine", "agent", "user", "controller")
export type EndBy = typeof EndBy.Type

/** A run's end: its kind, who ended it, and the node (and attempt) it stood at then. */
export const RunEnd = Schema.Struct({
  kind: EndKind,
  by: EndBy,
  nodeId: Schema.NullOr(Schema.String),
  attemptId: Schema.NullOr(Schema.String)
})
export type RunEnd = typeof RunEnd.Type

/** Why a run ended badly: the message, the node it happened at, and the node's own error. */
export const RunError = Schema.Struct({
  message: Schema.String,
  nodeId: Schema.NullOr(Schema.String),
  original: Schema.NullOr(Schema.String)
})
export type RunError = typeof RunError.Type
