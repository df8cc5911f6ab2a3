/** Short, bounded descriptions of failures for warnings and receipts (never whole stacks). */
import { Cause } from "effect"

const MAX = 300

const clip = (text: string) => (text.length <= MAX ? text : `${text.slice(0, MAX - 1)}…`)

/** One line naming the error's tag (when it has one) and its message. */
export const describeError = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : null
    const message = "message" in error && typeof error.message === "string" ? error.message : ""
    if (tag === "TimeoutException") return "timed out"
    if (tag !== null) return clip(message.length > 0 ? `${tag}: ${message}` : tag)
    if (message.length > 0) return clip(message)
  }
  return clip(String(error))
}

/** Describe the first failure or defect of a cause. */
export const describeCause = (cause: Cause.Cause<unknown>): string => describeError(Cause.squash(cause))
