/**
 * Source events: the workflow transitions the successor-turn core reacts to. The engine (and
 * the tool/command adapters) publish these as plain data through the `SourceEvents` port;
 * `event-policy.ts` decides what each one means for turn intents.
 */
import type { Cause } from "./turn-intent.ts"

/** Who started a run: the model through the `workflow` tool, or the user through `/workflow`. */
export type RunOrigin = "tool" | "command"

/** The identity of a run as the successor-turn core needs it. */
export interface RunRef {
  readonly runId: string
  /** Workflow identity used in messages (name, or name@revision). */
  readonly workflowRef: string
  readonly workflowName: string
  /** The Pi session that owns the successor turn. */
  readonly targetSessionId: string
  readonly origin: RunOrigin
}

/**
 * Abort provenance recorded on the active run before its turn is aborted. Terminal handling
 * reuses it, so the terminal transition and the abort share one source event and one intent.
 */
export interface Provenance {
  readonly cause: Cause
  readonly nodeId: string | null
  readonly attemptId: string | null
  /** The run's ordinal for this interruption (0, 1, …): distinct interruptions get distinct events. */
  readonly interruption: number
}

/** Causes that stop an active workflow turn with `ctx.abort()`. */
export type ActiveTurnCause = "agentCancelled" | "timedOut" | "controllerInterrupted" | "claimLost"

/** Terminal run states; each owes the model a terminal turn (a direct user cancel excepted). */
export type TerminalState = "cancelled" | "timed_out" | "failed" | "completed"

/** Transitions that never cause an automatic model turn. */
export type QuietKind = "directCancel" | "pause" | "userHold" | "shutdown"

/**
 * The run reached a durable terminal state. A completed run's presentation is its natural
 * successor; any other end has none.
 */
export interface RunTerminalEvent {
  readonly _tag: "RunTerminal"
  readonly run: RunRef
  readonly state: TerminalState
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly reason: string | null
  /** Set when an earlier active-turn abort of this run is what ended it. */
  readonly provenance: Provenance | null
  /** The run's interruption ordinal to use when no provenance exists. */
  readonly interruption: number
  /**
   * Who cancelled the run (state `cancelled`), as the run row records it. The user's direct
   * cancel owes no turn, even when an earlier system abort of the run is still outstanding.
   */
  readonly cancelledBy?: "agent" | "user"
}

export type SourceEvent =
  /** An active workflow agent turn must stop now (agent cancel, step timeout, controller, claim loss). */
  | {
      readonly _tag: "ActiveTurnInterrupted"
      readonly run: RunRef
      readonly provenance: Provenance & { readonly cause: ActiveTurnCause }
      readonly reason: string | null
      /**
       * Set when the run has already ended (another runner ended it before this one learned
       * that its claim was lost). When that end owes its own successor turn, the abort keeps
       * that intent instead of creating a second one for the same stop; when it owes none (the
       * user's direct cancel), the turn is stopped and no intent is made.
       */
      readonly ended?: RunTerminalEvent
      /**
       * Claim loss after the new owner already opened the request of a later step: its prompt
       * is the session's successor turn, so the old turn is stopped and no intent is made.
       */
      readonly superseded?: boolean
    }
  /** The run reached a durable terminal state (see `RunTerminalEvent`). */
  | RunTerminalEvent
  /** A queued launch could not be activated; its queue row is durably failed. */
  | { readonly _tag: "LaunchFailed"; readonly run: RunRef; readonly reason: string }
  /**
   * Durable handoff evidence: the claim was lost and no runner will continue the run for this
   * session. When the run has ended, `observedState` is its end state.
   */
  | {
      readonly _tag: "HandoffEnded"
      readonly run: RunRef
      readonly provenance: Provenance
      readonly observedState: string
      readonly reason: string | null
      /** Who cancelled the run, when it ended `cancelled`: the user's cancel owes no turn. */
      readonly cancelledBy?: "agent" | "user"
    }
  /** Direct `/workflow cancel`, pause, user Escape / hold, session shutdown. */
  | { readonly _tag: "Quiet"; readonly run: RunRef | null; readonly kind: QuietKind }
