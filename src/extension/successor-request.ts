/**
 * The model request for a terminal successor (a fallback or a presentation): Pi has written the
 * message to the session file before it emits `context`, and the request follows. The extension
 * records a `pi-workflows-successor-requested` entry as late as Pi lets it, in
 * `before_provider_request` (after the context is converted and the payload built, right before
 * the provider call), so a restart never starts a second turn for a successor whose request was
 * sent (`unanswered-successor.ts`), and a kill before that point leaves the successor to the
 * restart's turn trigger. The test-only crash point `beforeSuccessorRequest` kills Pi just
 * before that record: the state "written but never answered". Dependency-free: the entry runs
 * it on every request.
 */
import { BEFORE_SUCCESSOR_REQUEST, CRASH_AT_ENV } from "../delivery/crash-env.ts"
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

/**
 * Right before the provider call of a request that answers a successor (`answers`, from
 * `answeredSuccessor` at `context`): record it.
 */
export const beforeProviderCall = (
  answers: string | null,
  record: (customType: string, data: Readonly<Record<string, unknown>>) => void
): void => {
  if (answers === null) return
  if (process.env[CRASH_AT_ENV] === BEFORE_SUCCESSOR_REQUEST) process.kill(process.pid, "SIGKILL")
  record(SUCCESSOR_REQUESTED_TYPE, { answers })
}

/** Both steps at once (what a request with no separate provider hook does). */
export const beforeModelRequest = (
  messages: ReadonlyArray<unknown>,
  record: (customType: string, data: Readonly<Record<string, unknown>>) => void
): void => beforeProviderCall(answeredSuccessor(messages), record)
