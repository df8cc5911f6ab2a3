/**
 * Session ownership of a run. A run belongs to the Pi session that started it (its target
 * session): only that session's agent may act on it through the `workflow` tool. The user's
 * `/workflow` command and the CLI are the user's authority and may act on any run of the project.
 * One predicate serves every tool action (status, cancel, restart, submit, progress).
 */
import { Schema } from "effect"

/** The tool actions that name a run, directly or through one of its requests. */
export const OwnedAction = Schema.Literal("status", "cancel", "restart", "submit", "progress")
export type OwnedAction = typeof OwnedAction.Type

/** The agent of one session asked to act on another session's run; nothing was changed. */
export class ForeignRun extends Schema.TaggedError<ForeignRun>()("ForeignRun", {
  runId: Schema.String,
  ownerSessionId: Schema.String,
  action: OwnedAction
}) {
  override get message() {
    return (
      `run ${this.runId} belongs to another Pi session, not this one; ` +
      `the workflow tool cannot ${this.action} it and nothing was changed. ` +
      "Act only on this session's runs."
    )
  }
}

/** Null when `sessionId` owns `run`, else the refusal to return. */
export const foreignRun = (
  run: { readonly runId: string; readonly targetSessionId: string },
  sessionId: string,
  action: OwnedAction
): ForeignRun | null =>
  run.targetSessionId === sessionId
    ? null
    : new ForeignRun({ runId: run.runId, ownerSessionId: run.targetSessionId, action })
