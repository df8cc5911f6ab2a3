/**
 * Passive notifications are display-only: Pi keeps them in the session (the user sees them),
 * but every model request is built without them, so the model's context is exactly what it
 * would be without notifications. Dependency-free: the entry registers it before the app loads.
 */
import { NOTIFICATION_TYPE } from "../domain/message-types.ts"

const isNotification = (message: unknown): boolean =>
  typeof message === "object" &&
  message !== null &&
  "role" in message &&
  message.role === "custom" &&
  "customType" in message &&
  message.customType === NOTIFICATION_TYPE

/** The messages without notifications, or undefined when there were none (Pi keeps its list). */
export const withoutNotifications = <M>(messages: ReadonlyArray<M>): Array<M> | undefined => {
  const kept = messages.filter((message) => !isNotification(message))
  return kept.length === messages.length ? undefined : kept
}
