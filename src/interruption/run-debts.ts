/**
 * Run debts: which durable run ends owe the model a successor turn, as pure policy over stored
 * rows. The engine publishes exactly `terminalEvent(row)` when a run ends, and reconciliation
 * (session start, periodic pass) recomputes the same event from the same row after a crash, so
 * both address one deterministic intent and a debt is never paid twice.
 *
 * - A run that ended `cancelled`, `timed_out` or `failed` owes what the event policy says for
 *   its `RunTerminal` event: the reused abort intent when an abort is outstanding on the row
 *   (not after the user's cancel), else (not cancelled) a failure intent.
 * - A pending, ineligible intent whose run has ended can no longer be resolved by a natural
 *   prompt: it owes a fallback and becomes eligible.
 * - An end whose reused abort was answered by a workflow prompt owes its own intent instead
 *   (`owedWithoutAnswered`).
 * - A completed run owes its terminal turn intent (cause `completed`, or the reused abort intent):
 *   its presentation resolves it; after a crash the intent becomes eligible and its fallback
 *   carries the terminal decision. A completed run with no intent whose presentation is already
 *   recorded (`presented` event, or in the branch) owes nothing: it was presented before this
 *   version created intents for completed runs.
 * - A claim-loss intent beside an end that owes its own successor is covered by that end: one
 *   message answers both (`coveredByEnd`).
 * - The user's direct cancel owes nothing, and retires every pending intent of its run
 *   (`endOwesNothing`): no fallback, whatever interruption came before it.
 *
 * The deterministic source-event and intent IDs of an intent request are here too: what makes
 * the engine's and reconciliation's intent one and the same.
 */
import { Effect } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import { decide } from "../domain/event-policy.ts"
import { intentId, sourceEventId } from "../domain/identity.ts"
import { type IntentRequest, intentRequest } from "../domain/event-policy.ts"
import type { Provenance, RunRef, SourceEvent, TerminalState } from "../domain/event-policy.ts"
import type { Resolution, TurnIntent } from "../domain/turn-intent.ts"
import { isTerminal, type RunRecord } from "../store/run-store.ts"
import type { RunEvent } from "../store/run-events.ts"
import type { EnsureIntent } from "../store/turn-intent-store.ts"
import { cancelledBy } from "../terminal/terminal-outcome.ts"

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
    interruption: record.interruptions,
    ...(record.state === "cancelled" ? { cancelledBy: cancelledBy(record) ?? "user" } : {})
  }
}

/**
 * Whether the run ended by the user's direct cancel, whose end owes the model no turn. Every
 * pending intent of such a run is retired: it stays pending and is never made eligible (no
 * message resolves it, so no resolution is recorded), whichever interruption stored it — an
 * earlier step timeout whose route was still running, or a claim loss reported late. Decided
 * from the stored row only, so every process and every restart decides alike.
 */
export const endOwesNothing = (record: RunRecord): boolean =>
  record.state === "cancelled" && cancelledBy(record) === "user"

/** The eligible intent an ended run owes, or null when its end owes none. */
export const owedIntent = (record: RunRecord): IntentRequest | null => {
  const event = terminalEvent(record, null)
  return event === null ? null : intentRequest(event, decide(event))
}

/**
 * Whether the ended run's end covers this claim-loss intent. The old runner stores a `claimLost`
 * intent when its handoff write did not answer in time (or failed) and the new owner ended the
 * run meanwhile: the provenance never reached the row, so the end made (or owes) an intent of
 * its own, `owedIntentId`. Had the write answered in time, the old runner would have kept that
 * end's intent and stored none (`interrupt.ts`): the end's one message is the successor of both,
 * whatever the timing. Decided from stored facts only (an ended row no longer changes), so every
 * process and every restart decides alike. An end that owes nothing (a direct user cancel)
 * covers nothing: it retires the claim-loss intent instead (`endOwesNothing`).
 */
export const coveredByEnd = (intent: TurnIntent, record: RunRecord, owedIntentId: string | null): boolean =>
  intent.cause === "claimLost" &&
  intent.runId === record.runId &&
  isTerminal(record.state) &&
  owedIntentId !== null &&
  intent.intentId !== owedIntentId

/** The message that answered an end and the intents it covers. */
export interface EndAnswer {
  readonly resolution: Resolution
  readonly messageId: string
}

/**
 * The message that already answers a run's end, from the resolved intents of the run: the owed
 * intent's own, else a covered intent's presentation or fallback (natural delivery resolves a
 * run's oldest pending intent, which may be the covered one). A workflow prompt that resolved a
 * claim-loss intent came before the end and answers only that stop.
 */
export const endAnswer = (
  record: RunRecord,
  owedIntentId: string,
  resolved: ReadonlyArray<TurnIntent>
): EndAnswer | null => {
  const answers = (intent: TurnIntent) =>
    intent.resolvedAt !== null &&
    intent.resolution !== null &&
    intent.resolutionMessageId !== null &&
    (intent.intentId === owedIntentId ||
      (coveredByEnd(intent, record, owedIntentId) && intent.resolution !== "workflowPrompt"))
  const own = resolved.find((intent) => intent.intentId === owedIntentId)
  const found = own !== undefined && answers(own) ? own : resolved.find(answers)
  if (found === undefined || found.resolution === null || found.resolutionMessageId === null) return null
  return { resolution: found.resolution, messageId: found.resolutionMessageId }
}

/**
 * The intent an ended run owes when the abort its row reuses turns out to have been answered by
 * a workflow prompt (its intent resolved `workflowPrompt`): the prompt went out, its runner died
 * before the clear, and the intent was resolved from the branch only after the run had ended
 * (the store clears an answered abort it can see, `store/run-writes-sql.ts`). The end then owes
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

/**
 * Pending intents that no natural prompt can resolve any more: their run has ended. Not those
 * the run's end covers (`owedIntentIds`: each ended run's owed intent): the end's message
 * answers them; and not those of a run whose end owes nothing (`endOwesNothing`, the user's
 * direct cancel): they are retired.
 */
export const strandedIntents = (
  intents: ReadonlyArray<TurnIntent>,
  runs: ReadonlyMap<string, RunRecord>,
  owedIntentIds: ReadonlyMap<string, string> = new Map()
): ReadonlyArray<TurnIntent> =>
  intents.filter((intent) => {
    if (intent.resolvedAt !== null || intent.eligibleAt !== null) return false
    const run = runs.get(intent.runId)
    return (
      run !== undefined &&
      isTerminal(run.state) &&
      !endOwesNothing(run) &&
      !coveredByEnd(intent, run, owedIntentIds.get(intent.runId) ?? null)
    )
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

// The deterministic source-event and intent IDs of an intent request.

export interface IdentifiedRequest {
  readonly intentId: string
  readonly ensure: EnsureIntent
}

export const identify = (request: IntentRequest): Effect.Effect<IdentifiedRequest, InvalidInput> =>
  Effect.gen(function* () {
    const source = yield* sourceEventId(request.key)
    const ensure: EnsureIntent = {
      sourceEventId: source,
      runId: request.run.runId,
      workflowRef: request.run.workflowRef,
      targetSessionId: request.run.targetSessionId,
      cause: request.cause,
      nodeId: request.nodeId,
      attemptId: request.attemptId,
      facts: request.facts,
      eligible: request.eligible
    }
    return { intentId: yield* intentId(ensure), ensure }
  })

/**
 * The intent of an abort with this provenance: the one its abort stores and any run end that
 * reuses the abort addresses (the same key as `intentRequest` builds for both).
 */
export const abortIntentId = (run: RunRef, provenance: Provenance): Effect.Effect<string, InvalidInput> =>
  Effect.flatMap(
    sourceEventId({
      runId: run.runId,
      cause: provenance.cause,
      nodeId: provenance.nodeId,
      attemptId: provenance.attemptId,
      interruption: provenance.interruption
    }),
    (source) =>
      intentId({
        targetSessionId: run.targetSessionId,
        runId: run.runId,
        sourceEventId: source,
        nodeId: provenance.nodeId,
        attemptId: provenance.attemptId,
        cause: provenance.cause
      })
  )
