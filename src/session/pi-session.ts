/**
 * PiSession: the port to one live Pi session. The Pi adapter builds it from `ExtensionAPI` and
 * `ctx`; tests and downstream programs use the scriptable fake in `pi-session-fake.ts`.
 * The port holds no policy: it reports state and performs the few actions Pi offers.
 */
import { Context, type Effect, Schema } from "effect"

/** A custom message as Pi stores it (`pi.sendMessage`). `content` reaches the model. */
export interface CustomMessage {
  readonly customType: string
  readonly content: string
  readonly display: boolean
  readonly details: Readonly<Record<string, unknown>>
}

export interface DeliveryOptions {
  readonly deliverAs: "steer" | "followUp" | "nextTurn"
  readonly triggerTurn: boolean
}

/** A custom message found in the current branch of the session. */
export interface BranchMessage {
  readonly entryId: string
  readonly customType: string
  /** Stored content as Pi keeps it (a string for messages this package sends). */
  readonly content: unknown
  /** Stored details, unknown until decoded. */
  readonly details: unknown
}

export interface Lifecycle {
  /** `session_shutdown` was seen: no new turns may start. */
  readonly shuttingDown: boolean
  /** The user interrupted a workflow (Escape) and it is held until explicit resume. */
  readonly userHold: boolean
}

/** Pi refused or failed to take the message; nothing was delivered. */
export class SendFailed extends Schema.TaggedError<SendFailed>()("SendFailed", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

export interface PiSessionService {
  /** The current session ID (it changes when the user starts a new session). */
  readonly sessionId: Effect.Effect<string>
  /** True when no agent turn is running or aborting. */
  readonly isIdle: Effect.Effect<boolean>
  /**
   * Completes when the session is verified idle: at once if it is idle now, otherwise at the
   * next `agent_settled`. An aborting turn is not idle until it settles.
   */
  readonly awaitIdle: Effect.Effect<void>
  /**
   * True while an `agent_settled` handler of this package runs. Pi reports the session idle
   * then, but holds every turn-triggering send made meanwhile until the handlers return.
   */
  readonly settling: Effect.Effect<boolean>
  /**
   * Completes when no `agent_settled` handler of this package runs: at once if none runs now,
   * otherwise when the running one returns. Natural delivery waits for it before it sends
   * (docs/protocol.md, rule 4); code running inside the handler must not.
   */
  readonly settleDone: Effect.Effect<void>
  readonly send: (message: CustomMessage, options: DeliveryOptions) => Effect.Effect<void, SendFailed>
  /** Custom messages on the current branch, oldest first. */
  readonly branch: Effect.Effect<ReadonlyArray<BranchMessage>>
  /**
   * Abort the active turn (`ctx.abort()`); a no-op when idle. The session stays not idle until
   * the aborted turn settles.
   */
  readonly abort: Effect.Effect<void>
  readonly lifecycle: Effect.Effect<Lifecycle>
  /** Tell the user something outside the model's context (warnings, errors). */
  readonly notify: (text: string, level: "info" | "warning" | "error") => Effect.Effect<void>
  /**
   * Set (or, with undefined, clear) one line in the footer under `key`, for the user only: a
   * later call with the same key replaces it. A no-op without a UI.
   */
  readonly showStatus: (key: string, text: string | undefined) => Effect.Effect<void>
  /**
   * True while Pi runs its interactive terminal UI (mode `tui`), where a live footer line is
   * drawn; false in RPC, JSON and print modes (RPC has a UI for dialogs, not a terminal), and
   * before Pi gave the session a context.
   */
  readonly terminalUi: Effect.Effect<boolean>
}

export class PiSession extends Context.Tag("pi-workflow-turns/PiSession")<PiSession, PiSessionService>() {}
