import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { decide, intentRequest, type SourceEvent } from "../../src/domain/event-policy.ts"
import { MAX_REASON_LENGTH, validateFacts } from "../../src/domain/facts.ts"
import { interrupted, provenance, run, terminal } from "../conformance/harness.ts"

const request = (event: SourceEvent) => intentRequest(event, decide(event))

describe("intent request", () => {
  it("terminal handling with provenance addresses the abort's source event, node and attempt", () => {
    const abort = request(interrupted("agentCancelled", { interruption: 2 }))
    const end = request({
      _tag: "RunTerminal",
      run: run(),
      state: "cancelled",
      nodeId: "other-node",
      attemptId: null,
      reason: null,
      provenance: provenance("agentCancelled", { interruption: 2 }),
      interruption: 5
    })
    expect(end?.key).toEqual(abort?.key)
    expect(end?.nodeId).toBe("implement")
    expect(end?.facts.observedState).toBe("cancelled")
    expect(end?.eligible).toBe(true)
    expect(abort?.facts.observedState).toBe("interrupted")
  })

  it("a distinct interruption of the same run has a distinct key", () => {
    expect(request(interrupted("timedOut", { interruption: 0 }))?.key).not.toEqual(
      request(interrupted("timedOut", { interruption: 1 }))?.key
    )
  })

  it("claim-loss facts are handoff facts; other facts are not", () => {
    expect(request(interrupted("claimLost"))?.facts).toMatchObject({
      handoff: true,
      observedState: "handoff"
    })
    expect(request(interrupted("controllerInterrupted"))?.facts.handoff).toBe(false)
    expect(request(terminal("failed", provenance("claimLost")))?.facts.handoff).toBe(false)
  })

  it("a handoff whose run durably ended says its end state, never that another runner may continue", () => {
    const handoff = (observedState: string): SourceEvent => ({
      _tag: "HandoffEnded",
      run: run(),
      provenance: provenance("claimLost"),
      observedState,
      reason: "another runner took over the workflow run"
    })
    expect(request(handoff("failed"))?.facts).toMatchObject({ handoff: false, observedState: "failed" })
    expect(request(handoff("cancelled"))?.facts).toMatchObject({ handoff: false, observedState: "cancelled" })
    // Not ended (the new owner parked it without a prompt here): still a handoff.
    expect(request(handoff("handoff"))?.facts).toMatchObject({ handoff: true, observedState: "handoff" })
  })

  it("launch failure uses $launch and no attempt", () => {
    const r = request({ _tag: "LaunchFailed", run: run(), reason: "scope must be a non-empty string" })
    expect(r).toMatchObject({ nodeId: "$launch", attemptId: null, cause: "launchFailed", eligible: true })
    expect(r?.facts).toMatchObject({ nodeId: "$launch", observedState: "failed", cause: "launchFailed" })
  })

  it("reasons are bounded so the facts always validate", () => {
    const r = request(terminal("failed", null, { reason: "x".repeat(MAX_REASON_LENGTH * 3) }))
    expect(r?.facts.reason?.length).toBeLessThanOrEqual(MAX_REASON_LENGTH)
    expect(Effect.runSync(Effect.either(validateFacts(r?.facts)))._tag).toBe("Right")
  })

  it("quiet events and no-intent decisions give no request", () => {
    expect(request({ _tag: "Quiet", run: run(), kind: "pause" })).toBeNull()
    expect(request(terminal("cancelled", null))).toBeNull()
  })
})
