/**
 * Run debts: which durable run ends owe the model a successor turn, as pure policy over stored
 * rows. The engine publishes exactly `terminalEvent(row)` when a run ends, and reconciliation
 * (session start, periodic pass) recomputes the same event from the same row after a crash, so
 * both address one deterministic intent and a debt is never paid twice.
 *
 * - A run that ended `cancelled`, `timed_out` or `failed` owes what the event policy says for
 *   its `RunTerminal` event: the reused abort intent when an abort is outstanding on the row,
 *   else (tool-started runs, not cancelled) a failure intent.
 * - A pending, ineligible intent whose run has ended can no longer be resolved by a natural
 *   prompt: it owes a fallback and becomes eligible.
 * - An end whose reused abort was answered by a workflow prompt owes its own intent instead
 *   (`owedWithoutAnswered`).
 * - A completed run owes its terminal turn intent (cause `completed`, or the reused abort intent):
 *   its presentation resolves it; after a crash the intent becomes eligible and its fallback
 *   carries the terminal decision. A completed run with no intent whose presentation is already
 *   recorded (`presented` event, or in the branch) owes nothing: it was presented before this
 *   version created intents for completed runs.
 */
import { decide } from "../domain/event-policy.ts"
import { cancelledBy } from "../terminal/terminal-outcome.ts"
import { type IntentRequest, intentRequest } from "../domain/intent-request.ts"
import type { RunRef, SourceEvent, TerminalState } from "../domain/source-event.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { isTerminal, type RunEvent, type RunRecord } from "../store/run-store.ts"

export const runRefOfRecord = (record: RunRecord): RunRef => ({
  runId: record.runId,
  workflowRef: record.workflowRef,
  workflowName: record.workflowName,
  targetSessionId: record.targetSessionId,
  origin: record.origin
})

const terminalStates: ReadonlySet<string> = new Set<TerminalState>([
  "cancelled",
  "timed_out",
  "failed",
  "completed"
])

/** The `RunTerminal` event of an ended run, from its row. */
export const terminalEvent = (
  record: RunRecord,
  reason: string | null
): Extract<SourceEvent, { readonly _tag: "RunTerminal" }> | null => {
  if (!terminalStates.has(record.state)) return null
  return {
    _tag: "RunTerminal",
    run: runRefOfRecord(record),
    state: record.state as TerminalState,
    nodeId: record.currentNodeId,
    attemptId: record.currentAttemptId,
    reason: reason ?? record.error?.message ?? (record.state === "completed" ? "the run completed" : null),
    provenance: record.abortPending ? record.abort : null,
    interruption: record.interruptions
  }
}

/** The eligible intent an ended run owes, or null when its end owes none. */
export const owedIntent = (record: RunRecord): IntentRequest | null => {
  const event = terminalEvent(record, null)
  return event === null ? null : intentRequest(event, decide(event))
}

/**
 * The intent an ended run owes when the abort its row reuses turns out to have been answered by
 * a workflow prompt (its intent resolved `workflowPrompt`): the prompt went out, its runner died
 * before the clear, and the intent was resolved from the branch only after the run had ended
 * (the store clears an answered abort it can see, `store/answered-abort.ts`). The end then owes
 * what it would have owed with no abort outstanding — for the agent's cancel, its own
 * `agentCancelled` turn, as the store records it when no abort is pending. Null when the row
 * reuses no abort or the end owes nothing of its own (a direct cancel).
 */
export const owedWithoutAnswered = (record: RunRecord): IntentRequest | null => {
  if (!record.abortPending || record.abort === null) return null
  const event = terminalEvent({ ...record, abortPending: false }, null)
  if (event === null) return null
  const own =
    cancelledBy(record) === "agent"
      ? {
          ...event,
          provenance: {
            cause: "agentCancelled" as const,
            nodeId: record.currentNodeId,
            attemptId: record.currentAttemptId,
            interruption: record.interruptions
          }
        }
      : event
  return intentRequest(own, decide(own))
}

/** Pending intents that no natural prompt can resolve any more: their run has ended. */
export const strandedIntents = (
  intents: ReadonlyArray<TurnIntent>,
  runs: ReadonlyMap<string, RunRecord>
): ReadonlyArray<TurnIntent> =>
  intents.filter((intent) => {
    if (intent.resolvedAt !== null || intent.eligibleAt !== null) return false
    const run = runs.get(intent.runId)
    return run !== undefined && isTerminal(run.state)
  })

/**
 * Whether a completed run that has no turn intent still owes one: not when its presentation is
 * recorded or in the branch (it was presented without an intent, before intents existed for
 * completed runs).
 */
export const completedOwesIntent = (
  record: RunRecord,
  events: ReadonlyArray<RunEvent>,
  presentedInBranch: ReadonlySet<string>
): boolean =>
  record.state === "completed" &&
  !presentedInBranch.has(record.runId) &&
  !events.some((event) => event.kind === "presented")
