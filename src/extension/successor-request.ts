/**
 * The model request for a terminal successor (a fallback or a presentation): Pi has written the
 * message to the session file before it emits `context`, and the request follows. The extension
 * records a `pi-workflows-successor-requested` entry once that request has left the process
 * (`request-on-wire.ts`: its last byte handed to the operating system, or the provider's answer
 * for a provider outside `fetch`), so a restart never starts a second turn for a successor whose
 * request was sent (`unanswered-successor.ts`), and a kill before that leaves the successor to
 * the restart's turn trigger. Test-only crash points kill Pi right before the request is armed
 * (`beforeSuccessorRequest`: the state "written but never answered") and right after the entry
 * is written (`afterSuccessorRequest`: "asked, and the reply died with Pi"). Dependency-free:
 * the entry runs it on every request.
 */
import {
  AFTER_SUCCESSOR_REQUEST,
  BEFORE_SUCCESSOR_REQUEST,
  CRASH_AT_ENV
} from "../delivery/unanswered-successor.ts"
import { DEFERRED_TURN_TYPE, SUCCESSOR_REQUESTED_TYPE } from "../domain/message-types.ts"

const SUCCESSORS: ReadonlySet<unknown> = new Set([DEFERRED_TURN_TYPE, "pi-workflows-presentation"])

const successorType = (message: unknown): string | null =>
  typeof message === "object" &&
  message !== null &&
  "role" in message &&
  message.role === "custom" &&
  "customType" in message &&
  typeof message.customType === "string" &&
  SUCCESSORS.has(message.customType)
    ? message.customType
    : null

/** The successor type a model request answers (`messages` as the model gets them), else null. */
export const answeredSuccessor = (messages: ReadonlyArray<unknown>): string | null =>
  successorType(messages.at(-1))

const crashAt = (point: string) => {
  if (process.env[CRASH_AT_ENV] === point) process.kill(process.pid, "SIGKILL")
}

/**
 * At `before_provider_request` of a request that answers a successor (`answers`, from
 * `answeredSuccessor` at `context`): record it once the request is on the wire (`whenSent`).
 */
export const beforeProviderCall = (
  answers: string | null,
  whenSent: (then: () => void) => void,
  record: (customType: string, data: Readonly<Record<string, unknown>>) => void
): void => {
  if (answers === null) return
  crashAt(BEFORE_SUCCESSOR_REQUEST)
  whenSent(() => {
    record(SUCCESSOR_REQUESTED_TYPE, { answers })
    crashAt(AFTER_SUCCESSOR_REQUEST)
  })
}
