/**
 * The model request, as the entry sees it around Pi's `context` and `before_provider_request`
 * hooks: what every request leaves out (`withoutHidden`), which successor it answers, and when it
 * has left this process (`makeWireWatch`), so the successor is recorded as requested only then.
 * Dependency-free: the entry registers all of it before the application loads and runs it on
 * every request.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel"
import type { Socket } from "node:net"
import {
  AFTER_SUCCESSOR_REQUEST,
  BEFORE_SUCCESSOR_REQUEST,
  CRASH_AT_ENV
} from "../delivery/unanswered-successor.ts"
import {
  DEFERRED_TURN_TYPE,
  NOTIFICATION_TYPE,
  SUCCESSOR_REQUESTED_TYPE,
  TURN_TRIGGER_TYPE
} from "../domain/message-types.ts"

/*
 * When a model request has left this process: the moment its last byte was handed to the
 * operating system. Pi's hooks end before the provider call (`before_provider_request`), and
 * between that hook and the bytes on the socket lie the SDK's request building and the HTTP
 * client (0.7–6 ms measured here, more under load): a Pi killed there never sent the request.
 * Node's HTTP client (undici, behind `fetch`) reports on diagnostics channels when it sent a
 * request's headers (with the socket) and its body; once the socket's own buffer is empty too,
 * the bytes are the kernel's, which delivers them even if the process dies the next instant.
 *
 * A provider that does not go through `fetch` (a websocket transport, `node:http`) is covered by
 * its response instead (`responded`): later than the wire, never earlier.
 */
const SEND_HEADERS = "undici:client:sendHeaders"
const BODY_SENT = "undici:request:bodySent"

interface Armed {
  /** The provider's origin (`http://host:port`), or null to take the next POST to anywhere. */
  readonly origin: string | null
  readonly onWire: () => void
  request?: object
  socket?: Socket
}

export interface WireWatch {
  /** Call `onWire` once, when the next request to `origin` is on the wire (or answered). */
  readonly arm: (origin: string | null, onWire: () => void) => void
  /** The provider answered: whatever is still armed was surely sent. */
  readonly responded: () => void
  /** The request ended without being sent (a provider error before the call): forget it. */
  readonly disarm: () => void
  /** Stop listening (the session is shutting down; a reload makes a new watch). */
  readonly close: () => void
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined

const isSocket = (value: unknown): value is Socket =>
  typeof value === "object" && value !== null && "writableLength" in value && "destroyed" in value

/** An origin for a provider base URL, or null when it has none (then any POST matches). */
export const originOf = (baseUrl: unknown): string | null => {
  if (typeof baseUrl !== "string") return null
  try {
    return new URL(baseUrl).origin
  } catch {
    return null
  }
}

/** Subscribes to the HTTP client's channels until `close` (one watch per extension load). */
export const makeWireWatch = (): WireWatch => {
  let armed: Armed | null = null

  const fire = (which: Armed) => {
    if (armed !== which) return
    armed = null
    // A channel subscriber that throws would crash Pi. A record that cannot be written leaves
    // the successor looking unanswered to a restart: one more model request at worst.
    try {
      which.onWire()
    } catch {}
  }

  // The bytes may still sit in the socket's own buffer when the body is "sent" (a large request
  // on a full socket): wait until Node handed the last of them to the kernel. Polled on a 1 ms
  // timer, not `setImmediate`, so a slow link does not keep the event loop spinning.
  const whenFlushed = (which: Armed, socket: Socket | undefined) => {
    if (armed !== which) return
    if (socket === undefined || socket.writableLength === 0) return fire(which)
    if (socket.destroyed) {
      armed = null
      return
    }
    setTimeout(() => whenFlushed(which, socket), 1)
  }

  const onHeaders = (message: unknown) => {
    const request = field(message, "request")
    if (armed === null || armed.request !== undefined || typeof request !== "object" || request === null)
      return
    if (field(request, "method") !== "POST") return
    if (armed.origin !== null && field(request, "origin") !== armed.origin) return
    armed.request = request
    const socket = field(message, "socket")
    if (isSocket(socket)) armed.socket = socket
  }
  const onBodySent = (message: unknown) => {
    const which = armed
    if (which === null || which.request === undefined || field(message, "request") !== which.request) return
    whenFlushed(which, which.socket)
  }
  subscribe(SEND_HEADERS, onHeaders)
  subscribe(BODY_SENT, onBodySent)

  return {
    arm: (origin, onWire) => {
      armed = { origin, onWire }
    },
    responded: () => {
      if (armed !== null) fire(armed)
    },
    disarm: () => {
      armed = null
    },
    close: () => {
      armed = null
      unsubscribe(SEND_HEADERS, onHeaders)
      unsubscribe(BODY_SENT, onBodySent)
    }
  }
}

/*
 * The model request for a terminal successor (a fallback or a presentation): Pi has written the
 * message to the session file before it emits `context`, and the request follows. The extension
 * records a `pi-workflows-successor-requested` entry once that request has left the process
 * (`makeWireWatch`: its last byte handed to the operating system, or the provider's answer
 * for a provider outside `fetch`), so a restart never starts a second turn for a successor whose
 * request was sent (`unanswered-successor.ts`), and a kill before that leaves the successor to
 * the restart's turn trigger. Test-only crash points kill Pi right before the request is armed
 * (`beforeSuccessorRequest`: the state "written but never answered") and right after the entry
 * is written (`afterSuccessorRequest`: "asked, and the reply died with Pi").
 */
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

/*
 * What every model request leaves out. Passive notifications are display-only: Pi keeps them in
 * the session (the user sees them), but the model's context is exactly what it would be without
 * them. A turn trigger (`delivery/unanswered-successor.ts`) only starts the turn that answers
 * the successor before it, so the model sees that successor as the newest message.
 */
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
