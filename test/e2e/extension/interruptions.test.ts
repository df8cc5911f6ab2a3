/**
 * Real Pi, interruptions that owe the model exactly one successor turn: the agent cancels its
 * own active step, a run fails after its start result, a queued launch fails at activation.
 */
import { describe, expect, it } from "vitest"
import { crashAfterStart, launchFailure, selfCancel } from "./scenarios.ts"
import { expectScenario } from "./support.ts"

describe("interruptions in real Pi", () => {
  it("agent self-cancel during an active step turn: the turn aborts, one fallback after settle", async () => {
    const { observation } = await expectScenario(selfCancel)
    expect(observation?.intents[0]?.eligibleAt).not.toBeNull()
  })

  it("crash after a successful start: one fallback carrying the real failure reason", async () => {
    const { observation } = await expectScenario(crashAfterStart)
    expect(observation?.intents[0]?.reason).toContain("metrics database unreachable")
  })

  it("queued launch failure: one fallback, cause launchFailed at $launch", async () => {
    const { observation } = await expectScenario(launchFailure)
    expect(observation?.intents[0]?.reason).toContain("locked for a release freeze")
  })
})
