/**
 * From a source event and its policy decision to the data a turn intent is created from: the
 * source-event key (hashed into `sourceEventId`), the immutable intent fields and the bounded
 * fallback facts. Pure; the deterministic IDs themselves come from `identity.ts`.
 *
 * Terminal and handoff events that carry abort provenance reuse that provenance for the key,
 * node and attempt, so they address the very intent the abort created.
 */
import { decide, type PolicyDecision } from "./event-policy.ts"
import { boundReason, FACTS_SCHEMA, type FallbackFacts } from "./facts.ts"
import { redactReason } from "./redact.ts"
import type { SourceEventKey } from "./identity.ts"
import type { RunRef, SourceEvent, TerminalState } from "./source-event.ts"
import { type Cause, LAUNCH_NODE } from "./turn-intent.ts"

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
      // The abort of a run that already ended keeps the intent that end owes (event-policy.ts).
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
