/**
 * Branch identity of resolving messages. Every message that resolves an intent carries
 * `turnIntentId` (and, for natural messages, `turnMessageId`) in its custom-message details.
 * Scanning the current branch for that ID repairs a crash or store failure between a
 * successful send and the stored resolution: the message is there, so the intent is resolved
 * without sending again. Pure.
 */
import { Option, Schema } from "effect"
import { resolutionMessageId } from "../domain/identity.ts"
import { redactText } from "../domain/redact.ts"
import type { Resolution } from "../domain/turn-intent.ts"
import type { BranchMessage, CustomMessage } from "../session/pi-session.ts"
import type { NaturalKind } from "./coordinator.ts"
import { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"

/** The details fields this package reads back; other fields are the sender's business. */
const TurnMark = Schema.Struct({
  turnIntentId: Schema.String,
  turnMessageId: Schema.optional(Schema.String)
})
const decodeMark = Schema.decodeUnknownOption(TurnMark)

export interface BranchMatch {
  readonly entry: BranchMessage
  /** The path the message in the branch represents. */
  readonly resolution: Resolution
}

const resolutionOf = (
  entry: BranchMessage,
  intentId: string,
  turnMessageId: string | undefined
): Resolution =>
  entry.customType === DEFERRED_TURN_TYPE
    ? "fallback"
    : turnMessageId === resolutionMessageId(intentId, "presentation")
      ? "presentation"
      : "workflowPrompt"

/** The oldest branch message that carries this intent ID, if any. */
export const findResolvingMessage = (
  branch: ReadonlyArray<BranchMessage>,
  intentId: string
): BranchMatch | null => {
  for (const entry of branch) {
    const mark = decodeMark(entry.details)
    if (Option.isSome(mark) && mark.value.turnIntentId === intentId) {
      return { entry, resolution: resolutionOf(entry, intentId, mark.value.turnMessageId) }
    }
  }
  return null
}

/** The natural message with the intent's identity added to its details. */
export const withTurnIntent = (
  message: CustomMessage,
  intentId: string,
  kind: NaturalKind
): CustomMessage => ({
  ...message,
  details: { ...message.details, turnIntentId: intentId, turnMessageId: resolutionMessageId(intentId, kind) }
})

/**
 * True when the branch entry is this very message (same type and content), not another one.
 * Pi stores what left through the redaction boundary, so both sides are compared redacted (the
 * redactor is idempotent: a stored, already redacted content compares equal).
 */
export const isSameMessage = (entry: BranchMessage, message: CustomMessage): boolean =>
  entry.customType === message.customType &&
  (entry.content === message.content ||
    (typeof entry.content === "string" && redactText(entry.content) === redactText(message.content)))
