/** The deterministic source-event and intent IDs of an intent request. */
import { Effect } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import { intentId, sourceEventId } from "../domain/identity.ts"
import type { IntentRequest } from "../domain/intent-request.ts"
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
