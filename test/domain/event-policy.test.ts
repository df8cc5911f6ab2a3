/** The spec's event-policy table, row by row, against the pure `decide`. */
import { describe, expect, it } from "vitest"
import { decide } from "../../src/domain/event-policy.ts"
import type { QuietKind, SourceEvent } from "../../src/domain/source-event.ts"
import { interrupted, provenance, run, terminal } from "../conformance/harness.ts"

const intent = (cause: string, eligible: boolean, abortTurn: boolean) =>
  expect.objectContaining({ _tag: "Intent", cause, eligible, abortTurn })

describe("event policy", () => {
  it("agent `workflow cancel` during an active turn: intent before abort, not yet eligible", () => {
    expect(decide(interrupted("agentCancelled"))).toEqual(intent("agentCancelled", false, true))
  })

  it("agent-step timeout: intent before abort, ineligible while a recovery prompt can arrive", () => {
    expect(decide(interrupted("timedOut"))).toEqual(intent("timedOut", false, true))
  })

  it("controller interruption and claim loss: intent before abort, ineligible", () => {
    expect(decide(interrupted("controllerInterrupted"))).toEqual(intent("controllerInterrupted", false, true))
    expect(decide(interrupted("claimLost"))).toEqual(intent("claimLost", false, true))
  })

  it("terminal cancel, timeout and failure after an abort reuse its cause and become eligible", () => {
    expect(decide(terminal("cancelled", provenance("agentCancelled")))).toEqual(
      intent("agentCancelled", true, false)
    )
    expect(decide(terminal("timed_out", provenance("timedOut")))).toEqual(intent("timedOut", true, false))
    expect(decide(terminal("failed", provenance("timedOut")))).toEqual(intent("timedOut", true, false))
  })

  it("asynchronous failure after a successful start tool result: eligible intent without abort", () => {
    expect(decide(terminal("failed", null))).toEqual(intent("failed", true, false))
    expect(decide(terminal("timed_out", null))).toEqual(intent("timedOut", true, false))
  })

  it("queued launch activation failure: eligible intent", () => {
    const event: SourceEvent = { _tag: "LaunchFailed", run: run(), reason: "bad input" }
    expect(decide(event)).toEqual(intent("launchFailed", true, false))
  })

  it("handoff with no successor: eligible, refreshing facts", () => {
    const event: SourceEvent = {
      _tag: "HandoffEnded",
      run: run(),
      provenance: provenance("claimLost"),
      observedState: "handoff",
      reason: null
    }
    expect(decide(event)).toEqual(intent("claimLost", true, false))
    expect(decide(event)).toMatchObject({ refreshFacts: true })
  })

  it("cancellations without agent provenance create nothing; user-started runs get their terminal turn", () => {
    expect(decide(terminal("failed", null, { run: run({ origin: "command" }) }))).toMatchObject({
      _tag: "Intent",
      cause: "failed",
      eligible: true
    })
    expect(decide(terminal("cancelled", null))._tag).toBe("NoIntent")
    expect(decide(terminal("cancelled", null, { run: run({ origin: "command" }) }))._tag).toBe("NoIntent")
  })

  it.each<QuietKind>(["directCancel", "pause", "userHold", "shutdown"])("%s is quiet: no intent", (kind) => {
    expect(decide({ _tag: "Quiet", run: run(), kind })._tag).toBe("NoIntent")
    expect(decide({ _tag: "Quiet", run: null, kind })._tag).toBe("NoIntent")
  })
})
