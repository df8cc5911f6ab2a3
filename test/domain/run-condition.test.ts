import { describe, expect, it } from "vitest"
import {
  conditionKind,
  conditionLabel,
  type RunConditionInput,
  runCondition,
  SHUTDOWN_PARK,
  USER_HOLD_REASON
} from "../../src/domain/run-condition.ts"
import { currentDeadline, stepDeadline, SUPERSEDED, type StepTiming } from "../../src/domain/step-deadline.ts"

const NOW = Date.parse("2026-12-02T12:00:00.000Z")
const live: RunConditionInput = {
  state: "running",
  parkedReason: null,
  pauseRequested: false,
  cancelRequested: null,
  claimToken: "t",
  claimExpiresAt: NOW + 60_000,
  openRequestId: "req-1"
}
const label = (run: Partial<RunConditionInput>, reminders = 0) =>
  conditionLabel(runCondition({ ...live, ...run }, NOW, reminders))

describe("runCondition", () => {
  it("a run stored running is running only with a live claim and nothing else holding it", () => {
    expect(label({})).toBe("running")
    expect(label({ parkedReason: SHUTDOWN_PARK, claimToken: null, claimExpiresAt: null })).toBe(
      "parked (shutdown)"
    )
    expect(label({ parkedReason: USER_HOLD_REASON, claimToken: null, claimExpiresAt: null })).toBe(
      "held (Escape)"
    )
    expect(label({ state: "waiting", parkedReason: USER_HOLD_REASON, claimToken: null })).toBe(
      "held (Escape)"
    )
    expect(label({ state: "waiting", claimToken: null })).toBe("paused")
    expect(label({ claimExpiresAt: NOW })).toBe("orphaned (owner session gone)")
    expect(label({ claimToken: null, claimExpiresAt: null })).toBe("orphaned (owner session gone)")
    expect(label({ pauseRequested: true })).toBe("running (pause requested)")
    expect(label({ cancelRequested: "user" })).toBe("running (cancel requested by the user)")
    expect(label({ state: "queued", claimToken: null })).toBe("queued")
    expect(label({ state: "timed_out", claimToken: null })).toBe("timed_out")
  })

  it("waiting for agent counts the reminders of the open request, at most 2", () => {
    expect(label({}, 1)).toBe("waiting for agent (reminder 1 of 2)")
    expect(label({}, 3)).toBe("waiting for agent (reminder 2 of 2)")
    expect(label({ openRequestId: null }, 2)).toBe("running")
    // A dead owner is the truth that matters first.
    expect(label({ claimExpiresAt: NOW - 1 }, 2)).toBe("orphaned (owner session gone)")
  })

  it("another park reason is shown short, on one line; kinds are one word", () => {
    const long = `interrupted: ${"x".repeat(80)}\nsecond line`
    expect(label({ parkedReason: long })).toMatch(/^parked \(interrupted: x+…\)$/)
    expect(label({ parkedReason: long }).length).toBeLessThanOrEqual("parked ()".length + 40)
    expect(conditionKind(runCondition({ ...live, claimToken: null }, NOW))).toBe("orphaned")
    expect(conditionKind(runCondition({ ...live, state: "completed" }, NOW))).toBe("completed")
  })
})

const at = (minutes: number) => new Date(NOW + minutes * 60_000).toISOString()
const step = (over: Partial<StepTiming>): StepTiming => ({
  nodeId: "a",
  timeoutMs: 3_600_000,
  outcome: null,
  interrupted: null,
  startedAt: at(0),
  ...over
})

describe("stepDeadline", () => {
  it("counts from the first attempt a takeover continued, not from the takeover", () => {
    const steps = [
      step({ nodeId: "before", outcome: "ok", startedAt: at(-90) }),
      step({ interrupted: SUPERSEDED, startedAt: at(-30) }),
      step({ interrupted: SUPERSEDED, startedAt: at(-20) }),
      step({ startedAt: at(-10) })
    ]
    expect(stepDeadline(steps, 3)).toBe(NOW + 30 * 60_000)
    expect(currentDeadline(steps)).toBe(NOW + 30 * 60_000)
  })

  it("a park ends the visit: the next attempt's limit is fresh; a parked run has no deadline", () => {
    const parked = [step({ interrupted: "parked: shutdown", startedAt: at(-30) })]
    expect(currentDeadline(parked)).toBeNull()
    expect(stepDeadline(parked, 0)).toBe(NOW + 30 * 60_000)
    const resumed = [...parked, step({ startedAt: at(-5) })]
    expect(currentDeadline(resumed)).toBe(NOW + 55 * 60_000)
  })

  it("no limit, an unknown limit or no step: no deadline", () => {
    expect(currentDeadline([step({ timeoutMs: null })])).toBeNull()
    expect(currentDeadline([])).toBeNull()
    expect(currentDeadline([step({ outcome: "ok" })])).toBeNull()
  })
})
