/** Stored-run fixtures for the pure terminal modules. */
import { Option } from "effect"
import type { RunRecord, RunState } from "../../src/store/run-store.ts"
import type { EndBy, EndKind, RunEnd } from "../../src/store/run-end.ts"

/** An end of `kind` by `by` at node "n" (the facts the store keeps; messages never decide). */
export const ending = (kind: EndKind, by: EndBy = "engine"): { readonly end: RunEnd } => ({
  end: { kind, by, nodeId: "n", attemptId: null }
})

/** The plain end of a terminal state (by the engine; a cancel by the user), none for a live run. */
const plainEnd = (state: RunState): RunEnd | null => {
  switch (state) {
    case "completed":
      return ending("completed").end
    case "failed":
      return ending("failed").end
    case "timed_out":
      return ending("timedOut").end
    case "cancelled":
      return ending("cancelled", "user").end
    default:
      return null
  }
}

export const run = (overrides: Partial<RunRecord> = {}): RunRecord => ({
  end: plainEnd(overrides.state ?? "failed"),
  runId: "20261201T040000Z-build-0a1b2c3d",
  workflowName: "build",
  workflowRef: "build@2",
  revision: 2,
  sourceFingerprint: "sha256:abc",
  snapshot: {},
  targetSessionId: "s1",
  origin: "tool",
  input: { target: "app", flags: ["a", "b"] },
  state: "failed",
  currentNodeId: "compile",
  currentAttemptId: null,
  maxSteps: 10,
  result: Option.none(),
  error: { message: "compiler crashed", nodeId: "compile", original: "exit 1" },
  pauseRequested: false,
  cancelRequested: null,
  parkedReason: null,
  interruptions: 0,
  abort: null,
  abortPending: false,
  claimToken: null,
  claimExpiresAt: null,
  claims: 1,
  openRequestId: null,
  waitRequestId: null,
  stepCount: 2,
  createdAt: "2026-12-01T04:00:00.000Z",
  updatedAt: "2026-12-01T04:01:00.000Z",
  startedAt: "2026-12-01T04:00:01.000Z",
  endedAt: "2026-12-01T04:01:00.000Z",
  ...overrides
})

export const completed = (result: unknown, overrides: Partial<RunRecord> = {}) =>
  run({ state: "completed", error: null, result: Option.some(result), ...overrides })
