/**
 * Source events and the event policy over them: the workflow transitions the successor-turn
 * core reacts to (the engine and the tool/command adapters publish them as plain data through
 * the `SourceEvents` port), what each one means for turn intents (`decide`: whether an intent is
 * created, whether it starts fallback-eligible, whether the active turn is aborted), and the data
 * the intent is created from (`intentRequest`). Pure; no I/O.
 */
import { boundReason, FACTS_SCHEMA, type FallbackFacts } from "./facts.ts"
import { redactReason } from "./redact.ts"
import type { SourceEventKey } from "./identity.ts"
import { type Cause, LAUNCH_NODE } from "./turn-intent.ts"

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
  | {
      readonly _tag: "Quiet"
      readonly run: RunRef | null
      readonly kind: QuietKind
      /**
       * A direct cancel that the run's runner took while the model worked on its step (the
       * cancel may have come from another process): that turn stops, and no turn follows.
       */
      readonly stopsTurn?: true
    }

/*
 * The event policy as data: for each source event, whether a turn intent is created, whether it
 * starts fallback-eligible, and whether the active turn is aborted. Pure; no I/O.
 */
export type PolicyDecision =
  | { readonly _tag: "NoIntent"; readonly why: string }
  /**
   * Stop the active turn and create no intent: its successor is another message (the new
   * owner's prompt), or none is owed at all (the run ended by the user's direct cancel).
   */
  | { readonly _tag: "AbortOnly"; readonly why: string }
  | {
      readonly _tag: "Intent"
      readonly cause: Cause
      /** Fallback-eligible from the start (durable state already proves no natural successor). */
      readonly eligible: boolean
      /** Abort the active turn after persisting the intent (abort ordering). */
      readonly abortTurn: boolean
      /** Refresh the facts of an existing intent (terminal handling). */
      readonly refreshFacts: boolean
    }

const causeOfTerminal = {
  cancelled: "agentCancelled",
  timed_out: "timedOut",
  failed: "failed",
  completed: "completed"
} as const

const DIRECT_CANCEL = "the user cancelled the run directly: no automatic model turn"

export const decide = (event: SourceEvent): PolicyDecision => {
  switch (event._tag) {
    case "ActiveTurnInterrupted": {
      // The new owner's prompt is the successor: stop the old turn, owe nothing more.
      if (event.superseded === true)
        return { _tag: "AbortOnly", why: "claim lost after the new owner's newer prompt (its successor)" }
      if (event.ended !== undefined) {
        // The run already ended: keep the one intent its end owes, still abort; an end that owes
        // nothing (the user's direct cancel) gets no turn, but its stale turn still stops.
        const owed = decide(event.ended)
        return owed._tag === "Intent" ? { ...owed, abortTurn: true } : { _tag: "AbortOnly", why: owed.why }
      }
      // Persist before ctx.abort(); a recovery prompt or a new owner may still resolve it.
      return {
        _tag: "Intent",
        cause: event.provenance.cause,
        eligible: false,
        abortTurn: true,
        refreshFacts: false
      }
    }
    case "RunTerminal":
      // Before anything else: an outstanding system abort of the run is retired, not answered.
      if (event.state === "cancelled" && event.cancelledBy === "user")
        return { _tag: "NoIntent", why: DIRECT_CANCEL }
      if (event.state === "completed") {
        // The terminal turn intent of a completed run (reusing an abort's intent that no prompt
        // resolved): its presentation resolves it naturally; only when the run has ended and the
        // presentation never arrived does reconciliation make it fallback-eligible.
        return {
          _tag: "Intent",
          cause: event.provenance?.cause ?? "completed",
          eligible: false,
          abortTurn: false,
          refreshFacts: true
        }
      }
      if (event.provenance !== null) {
        // Reuse the abort's intent; durable terminal state now proves no natural successor remains.
        return {
          _tag: "Intent",
          cause: event.provenance.cause,
          eligible: true,
          abortTurn: false,
          refreshFacts: true
        }
      }
      if (event.state !== "cancelled") {
        // The run's terminal turn (docs/terminal-turns.md): the model learns how it ended, whether
        // the start tool or the user's `/workflow start` launched it.
        return {
          _tag: "Intent",
          cause: causeOfTerminal[event.state],
          eligible: true,
          abortTurn: false,
          refreshFacts: true
        }
      }
      return { _tag: "NoIntent", why: "cancelled without an agent-origin abort (direct cancellation)" }
    case "LaunchFailed":
      return { _tag: "Intent", cause: "launchFailed", eligible: true, abortTurn: false, refreshFacts: false }
    case "HandoffEnded":
      if (event.observedState === "cancelled" && event.cancelledBy === "user")
        return { _tag: "NoIntent", why: DIRECT_CANCEL }
      return {
        _tag: "Intent",
        cause: event.provenance.cause,
        eligible: true,
        abortTurn: false,
        refreshFacts: true
      }
    case "Quiet":
      return event.stopsTurn === true && event.kind === "directCancel"
        ? { _tag: "AbortOnly", why: DIRECT_CANCEL }
        : { _tag: "NoIntent", why: `${event.kind} never causes an automatic model turn` }
  }
}

/*
 * From a source event and its policy decision to the data a turn intent is created from: the
 * source-event key (hashed into `sourceEventId`), the immutable intent fields and the bounded
 * fallback facts. Pure; the deterministic IDs themselves come from `identity.ts`.
 *
 * Terminal and handoff events that carry abort provenance reuse that provenance for the key,
 * node and attempt, so they address the very intent the abort created.
 */
export interface IntentRequest {
  readonly run: RunRef
  readonly key: SourceEventKey
  readonly cause: Cause
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly facts: FallbackFacts
  /** Create it (or make it) fallback-eligible. */
  readonly eligible: boolean
}

type IntentDecision = Extract<PolicyDecision, { readonly _tag: "Intent" }>

/** Observed state recorded while the turn is being stopped and nothing terminal is known yet. */
export const INTERRUPTED_STATE = "interrupted"
/** Observed state of an ownership transfer: another runner may continue the run. */
export const HANDOFF_STATE = "handoff"

const ENDED_STATES: ReadonlySet<string> = new Set<TerminalState>([
  "cancelled",
  "timed_out",
  "failed",
  "completed"
])

const facts = (
  run: RunRef,
  cause: Cause,
  fields: {
    readonly observedState: string
    readonly nodeId: string | null
    readonly attemptId: string | null
    readonly reason: string | null
    readonly handoff: boolean
  }
): FallbackFacts => ({
  schema: FACTS_SCHEMA,
  workflowName: run.workflowName,
  runId: run.runId,
  observedState: fields.observedState,
  cause,
  nodeId: fields.nodeId,
  attemptId: fields.attemptId,
  // Redact before bounding: clipping first could cut a secret so its pattern no longer matches.
  reason: fields.reason === null ? null : boundReason(redactReason(fields.reason)),
  handoff: fields.handoff
})

/** The intent an event asks for, or null when its decision creates none. */
export const intentRequest = (event: SourceEvent, decision: PolicyDecision): IntentRequest | null => {
  if (decision._tag !== "Intent") return null
  return requestFor(event, decision)
}

const requestFor = (event: SourceEvent, decision: IntentDecision): IntentRequest | null => {
  const { cause, eligible } = decision
  switch (event._tag) {
    case "ActiveTurnInterrupted": {
      // The abort of a run that already ended keeps the intent that end owes (`decide`).
      if (event.ended !== undefined && decide(event.ended)._tag === "Intent")
        return requestFor(event.ended, decision)
      const { nodeId, attemptId, interruption } = event.provenance
      const handoff = cause === "claimLost"
      return {
        run: event.run,
        key: { runId: event.run.runId, cause, nodeId, attemptId, interruption },
        cause,
        nodeId,
        attemptId,
        eligible,
        facts: facts(event.run, cause, {
          observedState: handoff ? HANDOFF_STATE : INTERRUPTED_STATE,
          nodeId,
          attemptId,
          reason: event.reason,
          handoff
        })
      }
    }
    case "RunTerminal": {
      const source = event.provenance ?? {
        nodeId: event.nodeId,
        attemptId: event.attemptId,
        interruption: event.interruption
      }
      return {
        run: event.run,
        key: { runId: event.run.runId, cause, ...pick(source) },
        cause,
        nodeId: source.nodeId,
        attemptId: source.attemptId,
        eligible,
        facts: facts(event.run, cause, {
          observedState: event.state,
          nodeId: source.nodeId,
          attemptId: source.attemptId,
          reason: event.reason,
          handoff: false
        })
      }
    }
    case "HandoffEnded": {
      // A run that durably ended (its end state observed) cannot be continued by anyone: its
      // facts never say a handoff (that another runner may go on).
      const source = event.provenance
      return {
        run: event.run,
        key: { runId: event.run.runId, cause, ...pick(source) },
        cause,
        nodeId: source.nodeId,
        attemptId: source.attemptId,
        eligible,
        facts: facts(event.run, cause, {
          observedState: event.observedState,
          nodeId: source.nodeId,
          attemptId: source.attemptId,
          reason: event.reason,
          handoff: cause === "claimLost" && !ENDED_STATES.has(event.observedState)
        })
      }
    }
    case "LaunchFailed":
      return {
        run: event.run,
        key: { runId: event.run.runId, cause, nodeId: LAUNCH_NODE, attemptId: null, interruption: 0 },
        cause,
        nodeId: LAUNCH_NODE,
        attemptId: null,
        eligible,
        facts: facts(event.run, cause, {
          observedState: "failed",
          nodeId: LAUNCH_NODE,
          attemptId: null,
          reason: event.reason,
          handoff: false
        })
      }
    case "Quiet":
      return null
  }
}

const pick = (source: {
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly interruption: number
}) => ({ nodeId: source.nodeId, attemptId: source.attemptId, interruption: source.interruption })
