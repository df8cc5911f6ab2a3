/**
 * Test-only crash point `beforeSuccessorRequest`: Pi has appended a terminal successor (a
 * fallback or a presentation) and is about to send the model request for it. Pi writes the
 * message to the session file before it emits `context`, so a kill here leaves exactly the state
 * "written but never answered". Dependency-free: the entry checks it on every request.
 */
import { BEFORE_SUCCESSOR_REQUEST, CRASH_AT_ENV } from "../delivery/crash-env.ts"
import { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"

const SUCCESSORS: ReadonlySet<unknown> = new Set([DEFERRED_TURN_TYPE, "pi-workflows-presentation"])

const isSuccessor = (message: unknown): boolean =>
  typeof message === "object" &&
  message !== null &&
  "role" in message &&
  message.role === "custom" &&
  "customType" in message &&
  SUCCESSORS.has(message.customType)

/** SIGKILL this process when asked to and the request's newest message is a successor. */
export const crashBeforeSuccessorRequest = (messages: ReadonlyArray<unknown>): void => {
  if (process.env[CRASH_AT_ENV] !== BEFORE_SUCCESSOR_REQUEST) return
  if (isSuccessor(messages.at(-1))) process.kill(process.pid, "SIGKILL")
}
