/** Which start a taken-over visit's limit counts from (pure; `src/engine/timeout.ts`). */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { deadlineOrigin, remainingMs, SUPERSEDED } from "../../src/engine/timeout.ts"
import type { StepRecord } from "../../src/store/run-store.ts"

const step = (seq: number, nodeId: string, over: Partial<StepRecord> = {}): StepRecord => ({
  runId: "r",
  seq,
  nodeId,
  attemptId: `att-${seq}`,
  timeoutMs: null,
  outcome: null,
  output: Option.none(),
  error: null,
  interrupted: null,
  startedAt: new Date(seq * 1_000).toISOString(),
  endedAt: null,
  runner: null,
  ...over
})

describe("deadlineOrigin", () => {
  it("a step left in flight: its own start", () => {
    expect(deadlineOrigin([step(1, "a", { outcome: "ok" }), step(2, "b")], "b")).toBe(2_000)
  })
  it("a chain of takeovers keeps the first attempt's start", () => {
    const steps = [
      step(1, "b", { interrupted: SUPERSEDED }),
      step(2, "b", { interrupted: SUPERSEDED }),
      step(3, "b")
    ]
    expect(deadlineOrigin(steps, "b")).toBe(1_000)
  })
  it("a takeover that died after closing the attempt, before starting the next", () => {
    expect(deadlineOrigin([step(1, "b", { interrupted: SUPERSEDED })], "b")).toBe(1_000)
  })
  it("a fresh visit: after an ended step, a park, another node, or nothing", () => {
    expect(deadlineOrigin([step(1, "b", { outcome: "ok" })], "b")).toBeNull()
    expect(deadlineOrigin([step(1, "b", { interrupted: "parked: shutdown" })], "b")).toBeNull()
    expect(deadlineOrigin([step(1, "a")], "b")).toBeNull()
    expect(deadlineOrigin([], "b")).toBeNull()
  })
  it("a revisit after a routed loop is not chained to the earlier visit", () => {
    const steps = [
      step(1, "b", { outcome: "failed" }),
      step(2, "b", { interrupted: SUPERSEDED }),
      step(3, "b")
    ]
    expect(deadlineOrigin(steps, "b")).toBe(2_000)
  })
})

describe("remainingMs", () => {
  it("counts from the origin, never below zero; no origin is the whole limit", () => {
    expect(remainingMs(10_000, 1_000, 9_000)).toBe(2_000)
    expect(remainingMs(10_000, 1_000, 20_000)).toBe(0)
    expect(remainingMs(10_000, null, 20_000)).toBe(10_000)
  })
})
