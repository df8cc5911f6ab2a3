/**
 * What every model request leaves out. Passive notifications are display-only: Pi keeps them in
 * the session (the user sees them), but the model's context is exactly what it would be without
 * them. A turn trigger (`delivery/unanswered-successor.ts`) only starts the turn that answers
 * the successor before it, so the model sees that successor as the newest message.
 * Dependency-free: the entry registers it before the app loads.
 */
import { NOTIFICATION_TYPE, TURN_TRIGGER_TYPE } from "../domain/message-types.ts"

const HIDDEN: ReadonlySet<unknown> = new Set([NOTIFICATION_TYPE, TURN_TRIGGER_TYPE])

const isHidden = (message: unknown): boolean =>
  typeof message === "object" &&
  message !== null &&
  "role" in message &&
  message.role === "custom" &&
  "customType" in message &&
  HIDDEN.has(message.customType)

/** The messages without hidden ones, or undefined when there were none (Pi keeps its list). */
export const withoutHidden = <M>(messages: ReadonlyArray<M>): Array<M> | undefined => {
  const kept = messages.filter((message) => !isHidden(message))
  return kept.length === messages.length ? undefined : kept
}
