/** The deterministic source-event and intent IDs of an intent request. */
import { Effect } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import { intentId, sourceEventId } from "../domain/identity.ts"
import type { IntentRequest, Provenance, RunRef } from "../domain/event-policy.ts"
import type { EnsureIntent } from "../store/turn-intent-store.ts"

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
