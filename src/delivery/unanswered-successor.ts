/**
 * Which successor Pi wrote but the model never answered: Pi was killed between appending the
 * message and the model request, so the restarted Pi starts no turn for it (the intent is
 * resolved from the branch, correctly, and is never sent again). Pi offers an extension no way
 * to run a turn on the branch as it is, so at session start the extension sends a hidden
 * trigger message that every model request drops (`extension/model-request.ts`): the model answers the
 * original message and no second copy of it exists. Pure: the caller reads the branch.
 *
 * Never twice: the extension's record that a model request for it left the process (even when
 * Pi died before the reply was written), a model reply, a user message or any other conversation
 * after it means the message was answered or overtaken. A trigger alone is not an answer: Pi can
 * die between appending it and its request, and then the next start triggers again (hidden, so
 * the model still sees one copy of the successor).
 *
 * The test-only crash variable and the two crash points that leave exactly this state (around
 * a terminal successor's model request) are here too: dependency-free, the Pi entry reads them.
 */
import {
  DEFERRED_TURN_TYPE,
  NOTIFICATION_TYPE,
  PRESENTATION_TYPE,
  SUCCESSOR_REQUESTED_TYPE,
  TURN_TRIGGER_SCHEMA,
  TURN_TRIGGER_TYPE
} from "../domain/message-types.ts"

/** The test-only crash variable (docs/reliability.md). Dependency-free: the Pi entry reads it too. */
export const CRASH_AT_ENV = "PI_WORKFLOW_TURNS_CRASH_AT"

/**
 * The crash point between Pi's append of a terminal successor and the model request for it:
 * the extension kills Pi in `before_provider_request` when the request's newest message is one.
 */
export const BEFORE_SUCCESSOR_REQUEST = "beforeSuccessorRequest"

/**
 * The crash point right after the extension recorded that the model request for a terminal
 * successor left the process: the request reached the provider, and its reply dies with Pi.
 */
export const AFTER_SUCCESSOR_REQUEST = "afterSuccessorRequest"

/** A branch entry as this decision sees it. */
export type TailEntry =
  | {
      readonly _tag: "Custom"
      readonly entryId: string
      readonly customType: string
      readonly details: unknown
    }
  /** A conversation message (user, assistant, tool result, …). */
  | { readonly _tag: "Message"; readonly role: string }
  /** Extension state (`custom` entries): never in the model's context. */
  | { readonly _tag: "State"; readonly customType: string }
  /** Not part of the model's context (model or label changes, …). */
  | { readonly _tag: "Other" }

export type TriggerDecision =
  | { readonly _tag: "Trigger"; readonly entryId: string }
  | {
      readonly _tag: "None"
      readonly why: "answered" | "requested" | "notOurs" | "empty"
    }

const hasTurnIntent = (details: unknown): boolean =>
  typeof details === "object" &&
  details !== null &&
  "turnIntentId" in details &&
  typeof details.turnIntentId === "string"

/**
 * A terminal successor: a fallback (always carries its intent) or a run's presentation. A
 * workflow step prompt is not one: a run left running is taken over and prompts again.
 */
const isSuccessor = (entry: Extract<TailEntry, { _tag: "Custom" }>): boolean =>
  (entry.customType === DEFERRED_TURN_TYPE && hasTurnIntent(entry.details)) ||
  entry.customType === PRESENTATION_TYPE

/** Whether the branch ends with a successor no model request answered, and which one. */
export const unansweredSuccessor = (branch: ReadonlyArray<TailEntry>): TriggerDecision => {
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i]
    if (entry === undefined || entry._tag === "Other") continue
    if (entry._tag === "State") {
      if (entry.customType === SUCCESSOR_REQUESTED_TYPE) return { _tag: "None", why: "requested" }
      continue
    }
    if (entry._tag === "Message") return { _tag: "None", why: "answered" }
    // Display-only notifications never reach the model: they neither answer nor need answering.
    // Nor does a trigger: one whose request left the process is followed by the record of it;
    // one without that record died with Pi before its request, and the successor is still owed.
    if (entry.customType === NOTIFICATION_TYPE || entry.customType === TURN_TRIGGER_TYPE) continue
    return isSuccessor(entry) ? { _tag: "Trigger", entryId: entry.entryId } : { _tag: "None", why: "notOurs" }
  }
  return { _tag: "None", why: "empty" }
}

/** The hidden trigger for the successor in `entryId` (its content never reaches the model). */
export const triggerMessage = (entryId: string) => ({
  customType: TURN_TRIGGER_TYPE,
  content: "Answer the workflow message above.",
  display: false,
  details: { schema: TURN_TRIGGER_SCHEMA, answers: entryId }
})
