/** The spec's event-policy table, row by row, against the pure `decide`. */
import { describe, expect, it } from "vitest"
import { decide, type QuietKind, type SourceEvent } from "../../src/domain/event-policy.ts"
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

  it("the user's direct cancel owes no turn, even with a system abort still outstanding", () => {
    const cancelled = (prov: ReturnType<typeof provenance> | null, cancelledBy: "agent" | "user") => {
      const event = terminal("cancelled", prov)
      return event._tag === "RunTerminal" ? { ...event, cancelledBy } : event
    }
    // A step timed out (its intent pending), its route ran on, then the user cancelled.
    expect(decide(cancelled(provenance("timedOut"), "user"))._tag).toBe("NoIntent")
    expect(decide(cancelled(null, "user"))._tag).toBe("NoIntent")
    // The agent's cancel reuses that abort: the run's one terminal turn.
    expect(decide(cancelled(provenance("timedOut"), "agent"))).toEqual(intent("timedOut", true, false))
    const handoff: SourceEvent = {
      _tag: "HandoffEnded",
      run: run(),
      provenance: provenance("claimLost"),
      observedState: "cancelled",
      reason: null,
      cancelledBy: "user"
    }
    expect(decide(handoff)._tag).toBe("NoIntent")
  })

  it("claim loss stops the old turn without an intent when its successor is elsewhere or none is owed", () => {
    const lost = interrupted("claimLost")
    if (lost._tag !== "ActiveTurnInterrupted") throw new Error("an interruption")
    // The new owner's prompt is the successor: abort, no intent.
    expect(decide({ ...lost, superseded: true })._tag).toBe("AbortOnly")
    // The run already ended by the user's cancel: abort, no intent.
    const byUser = terminal("cancelled", null)
    if (byUser._tag !== "RunTerminal") throw new Error("a terminal event")
    expect(decide({ ...lost, ended: { ...byUser, cancelledBy: "user" } })._tag).toBe("AbortOnly")
    // An end that owes its own successor keeps that intent, and still aborts.
    const failed = terminal("failed", null)
    if (failed._tag !== "RunTerminal") throw new Error("a terminal event")
    expect(decide({ ...lost, ended: failed })).toEqual(intent("failed", true, true))
  })

  it.each<QuietKind>(["directCancel", "pause", "userHold", "shutdown"])("%s is quiet: no intent", (kind) => {
    expect(decide({ _tag: "Quiet", run: run(), kind })._tag).toBe("NoIntent")
    expect(decide({ _tag: "Quiet", run: null, kind })._tag).toBe("NoIntent")
  })

  it("a direct cancel taken mid-step stops that turn and still owes nothing; no other quiet kind does", () => {
    expect(decide({ _tag: "Quiet", run: run(), kind: "directCancel", stopsTurn: true })._tag).toBe(
      "AbortOnly"
    )
    for (const kind of ["pause", "userHold", "shutdown"] as const)
      expect(decide({ _tag: "Quiet", run: run(), kind, stopsTurn: true })._tag).toBe("NoIntent")
  })
})
