/** Shared workload for the store sections: intents, their precomputed IDs and the layer under test. */
import { Context, Effect, Layer, type Scope } from "effect"
import { encodeFactsJson, FACTS_SCHEMA, type FallbackFacts } from "../src/domain/facts.ts"
import { intentId } from "../src/domain/identity.ts"
import type { OpenError } from "../src/store/database.ts"
import {
  type EnsureIntent,
  TurnIntentStore,
  type TurnIntentStoreService
} from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sqlite.ts"
import type { RawIntent, Synchronous } from "./sql.ts"

export const LEASE_MS = 60_000

/** Facts of a realistic size (a short reason), ~300 bytes of JSON. */
export const factsFor = (runId: string, nodeId: string | null): FallbackFacts => ({
  schema: FACTS_SCHEMA,
  workflowName: "review-and-fix",
  runId,
  observedState: "cancelled",
  cause: "agentCancelled",
  nodeId,
  attemptId: nodeId === null ? null : `${nodeId}-attempt-1`,
  reason: "The agent was cancelled by the user while the review node was waiting for tool output.",
  handoff: false
})

export interface Workload {
  readonly input: EnsureIntent
  readonly raw: RawIntent
}

/** One intent per index: its own run and target session, so every op touches exactly one row. */
export const workload = (prefix: string, index: number, sessionId?: string, runId?: string): Workload => {
  const run = runId ?? `${prefix}-run-${index}`
  const session = sessionId ?? `${prefix}-session-${index}`
  const nodeId = `node-${index % 7}`
  const input: EnsureIntent = {
    sourceEventId: `${prefix}-source-event-${index}`,
    runId: run,
    workflowRef: "review-and-fix@1",
    targetSessionId: session,
    cause: "agentCancelled",
    nodeId,
    attemptId: `${nodeId}-attempt-1`,
    facts: factsFor(run, nodeId)
  }
  const id = Effect.runSync(intentId(input))
  return {
    input,
    raw: {
      intentId: id,
      sourceEventId: input.sourceEventId,
      runId: run,
      workflowRef: input.workflowRef,
      targetSessionId: session,
      cause: input.cause,
      nodeId: input.nodeId,
      attemptId: input.attemptId,
      factsJson: encodeFactsJson(input.facts)
    }
  }
}

/** The store exactly as the package builds it (`layerSqlite`), scoped to the caller. */
export const openLayerStore = (
  filename: string,
  synchronous: Synchronous = "NORMAL"
): Effect.Effect<TurnIntentStoreService, OpenError, Scope.Scope> =>
  Effect.map(Layer.build(layerSqlite({ filename, synchronous })), (context) =>
    Context.get(context, TurnIntentStore)
  )

/** Microseconds since an arbitrary origin. */
export const nowUs = (): number => performance.now() * 1000
