/**
 * The event policy as data: for each source event, whether a turn intent is created, whether it
 * starts fallback-eligible, and whether the active turn is aborted. Pure; no I/O.
 */
import type { SourceEvent } from "./source-event.ts"
import type { Cause } from "./turn-intent.ts"

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
      return { _tag: "NoIntent", why: `${event.kind} never causes an automatic model turn` }
  }
}
