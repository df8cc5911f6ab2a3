/** Valid sample inputs for facts, intents and runs; tests override only the field they are about. */
import { FACTS_SCHEMA, type FallbackFacts } from "../../src/domain/facts.ts"
import type { NewRun } from "../../src/store/run-store.ts"
import type { EnsureIntent } from "../../src/store/turn-intent-store.ts"

export const sampleFacts = (overrides: Partial<FallbackFacts> = {}): FallbackFacts => ({
  schema: FACTS_SCHEMA,
  workflowName: "autoimplement",
  runId: "run-1",
  observedState: "failed",
  cause: "failed",
  nodeId: "$launch",
  attemptId: null,
  reason: "scope must be a non-empty string",
  handoff: false,
  ...overrides
})

export const sampleIntent = (overrides: Partial<EnsureIntent> = {}): EnsureIntent => ({
  sourceEventId: "source-event:1",
  runId: "run-1",
  workflowRef: "autoimplement",
  targetSessionId: "session-1",
  cause: "failed",
  nodeId: "build",
  attemptId: "attempt-1",
  facts: sampleFacts(),
  ...overrides
})

/** A value the types forbid, as an untyped caller (or stored JSON) could pass it. Tests only. */
export const unchecked = <T>(value: unknown): T => value as T

/** A run to reserve: the `demo` workflow for session s1, starting at `first`. */
export const sampleRun = (runId: string, overrides: Partial<NewRun> = {}): NewRun => ({
  runId,
  workflowName: "demo",
  workflowRef: "demo@1",
  revision: 1,
  sourceFingerprint: "sha256:abc",
  snapshot: { schema: "pi-workflows.definition-snapshot.v1" },
  targetSessionId: "s1",
  origin: "tool",
  input: {},
  startAt: "first",
  maxSteps: 10,
  ...overrides
})

/** A waiting presentation's question (its run and request), read from a message's details; null for any other message. */
export const waitingQuestion = (
  details: unknown
): { readonly runId: string; readonly requestId: string } | null => {
  if (typeof details !== "object" || details === null) return null
  const [state, runId, requestId] = ["state", "runId", "requestId"].map((key) => Reflect.get(details, key))
  return state === "waiting" && typeof runId === "string" && typeof requestId === "string"
    ? { runId, requestId }
    : null
}
