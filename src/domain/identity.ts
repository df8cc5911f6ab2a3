/**
 * Deterministic identities and session ownership. The same inputs give the same ID in any
 * process and across restarts: a SHA-256 digest over a canonical JSON array of the inputs, so no
 * separator inside a value can make two different input lists collide. A run belongs to the Pi
 * session that started it (`foreignRun`, below).
 */
import { createHash } from "node:crypto"
import { Effect, Schema } from "effect"
import { InvalidInput } from "./errors.ts"
import { type Cause, LAUNCH_NODE, MAX_ID_LENGTH } from "./turn-intent.ts"

const digest = (prefix: string, parts: ReadonlyArray<string | number | null>): string =>
  `${prefix}:${createHash("sha256").update(JSON.stringify(parts)).digest("hex")}`

/**
 * The error for one ID-like input, or undefined when it is a non-empty string within the store's
 * key limit. A plain function, so hot paths can chain checks without an Effect step each.
 */
export const invalidId = (field: string, value: string): InvalidInput | undefined =>
  value.length === 0
    ? new InvalidInput({ field, message: `${field} must be a non-empty string` })
    : value.length > MAX_ID_LENGTH
      ? new InvalidInput({ field, message: `${field} must be at most ${MAX_ID_LENGTH} characters` })
      : undefined

const invalidOptionalId = (field: string, value: string | null): InvalidInput | undefined =>
  value === null ? undefined : invalidId(field, value)

/** Check one ID-like input: a non-empty string within the store's key limit. */
export const checkId = (field: string, value: string): Effect.Effect<string, InvalidInput> => {
  const error = invalidId(field, value)
  return error === undefined ? Effect.succeed(value) : Effect.fail(error)
}

/**
 * One workflow transition that needs a successor turn. `interruption` is the run's ordinal for
 * this interruption, so a later, distinct interruption in the same attempt gets its own event.
 */
export interface SourceEventKey {
  readonly runId: string
  readonly cause: Cause
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly interruption: number
}

// Both IDs are derived on every abort and every ensure: plain checks in one suspend, the first
// failing one is the error (the same order and messages as a step-by-step check).
export const sourceEventId = (key: SourceEventKey): Effect.Effect<string, InvalidInput> =>
  Effect.suspend(() => {
    const error =
      invalidId("runId", key.runId) ??
      invalidOptionalId("nodeId", key.nodeId) ??
      invalidOptionalId("attemptId", key.attemptId) ??
      (Number.isSafeInteger(key.interruption) && key.interruption >= 0
        ? undefined
        : new InvalidInput({ field: "interruption", message: "interruption must be a non-negative integer" }))
    return error !== undefined
      ? Effect.fail(error)
      : Effect.succeed(
          digest("source-event", [
            key.runId,
            key.nodeId ?? LAUNCH_NODE,
            key.attemptId,
            key.cause,
            key.interruption
          ])
        )
  })

export interface IntentKey {
  readonly targetSessionId: string
  readonly runId: string
  readonly sourceEventId: string
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly cause: Cause
}

/** `deferred-turn:<sha256>` over target session, run, source event, node or `$launch`, attempt, cause. */
export const intentId = (key: IntentKey): Effect.Effect<string, InvalidInput> =>
  Effect.suspend(() => {
    const error =
      invalidId("targetSessionId", key.targetSessionId) ??
      invalidId("runId", key.runId) ??
      invalidId("sourceEventId", key.sourceEventId) ??
      invalidOptionalId("nodeId", key.nodeId) ??
      invalidOptionalId("attemptId", key.attemptId)
    return error !== undefined
      ? Effect.fail(error)
      : Effect.succeed(
          digest("deferred-turn", [
            key.targetSessionId,
            key.runId,
            key.sourceEventId,
            key.nodeId ?? LAUNCH_NODE,
            key.attemptId,
            key.cause
          ])
        )
  })

/** Stable message identity for the one message that resolves an intent. */
export const resolutionMessageId = (turnIntentId: string, resolution: string): string =>
  digest("turn-message", [turnIntentId, resolution])

/*
 * Session ownership of a run. A run belongs to the Pi session that started it (its target
 * session): only that session's agent may act on it through the `workflow` tool. The user's
 * `/workflow` command and the CLI are the user's authority and may act on any run of the project.
 * One predicate serves every tool action (status, cancel, restart, submit, progress).
 */
/** The tool actions that name a run, directly or through one of its requests. */
export const OwnedAction = Schema.Literal("status", "cancel", "restart", "submit", "progress", "answer")
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
