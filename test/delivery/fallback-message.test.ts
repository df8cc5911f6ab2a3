import { describe, expect, it } from "vitest"
import { FACTS_SCHEMA, type FallbackFacts } from "../../src/domain/facts.ts"
import { DEFERRED_TURN_TYPE } from "../../src/domain/message-types.ts"
import type { TurnIntent } from "../../src/domain/turn-intent.ts"
import {
  DEFERRED_TURN_MESSAGE_SCHEMA,
  FALLBACK_DELIVERY,
  fallbackMessage
} from "../../src/delivery/fallback.ts"

const intent = (facts: Partial<FallbackFacts> = {}, cause: TurnIntent["cause"] = "failed"): TurnIntent => ({
  intentId: "deferred-turn:abc",
  sourceEventId: "source-event:1",
  runId: "run-1",
  workflowRef: "autoimplement@1",
  targetSessionId: "session-1",
  cause,
  nodeId: "implement",
  attemptId: "attempt-1",
  facts: {
    schema: FACTS_SCHEMA,
    workflowName: "autoimplement",
    runId: "run-1",
    observedState: "failed",
    cause,
    nodeId: "implement",
    attemptId: "attempt-1",
    reason: "tests failed: 3 of 40",
    handoff: false,
    ...facts
  },
  requestedAt: "2026-01-01T00:00:00.000Z",
  eligibleAt: "2026-01-01T00:00:00.000Z",
  resolvedAt: null,
  resolution: null,
  resolutionMessageId: null,
  deliveryClaimToken: null,
  deliveryClaimExpiresAt: null
})

// Claims this message must never make: that something was recovered, resumed or retried.
const OVERCLAIMS =
  /recovered|recovery (ran|succeeded|happened)|has been (resumed|retried|restarted)|was (resumed|retried)/i

describe("fallback message", () => {
  it("uses the deferred-turn type, the v1 details schema and followUp + triggerTurn", () => {
    const message = fallbackMessage(intent())
    expect(message.customType).toBe(DEFERRED_TURN_TYPE)
    expect(message.customType).toBe("pi-workflows-deferred-turn")
    expect(message.details).toEqual({
      schema: DEFERRED_TURN_MESSAGE_SCHEMA,
      turnIntentId: "deferred-turn:abc",
      runId: "run-1",
      cause: "failed",
      workflowName: "autoimplement",
      observedState: "failed"
    })
    expect(DEFERRED_TURN_MESSAGE_SCHEMA).toBe("pi-workflows.deferred-turn-message.v1")
    expect(FALLBACK_DELIVERY).toEqual({ deliverAs: "followUp", triggerTurn: true })
  })

  it("states the observed facts and asks to inspect durable state first", () => {
    const { content } = fallbackMessage(intent())
    for (const fact of [
      "autoimplement",
      "run-1",
      "failed",
      "implement",
      "attempt-1",
      "tests failed: 3 of 40"
    ]) {
      expect(content).toContain(fact)
    }
    expect(content).toContain(`{"action": "status", "runId": "run-1"}`)
    expect(content).toMatch(/Inspect the run's durable state first/)
    expect(content).toMatch(/whether a correction is needed and whether you are authorized/)
    expect(content).toMatch(/recorded as failed/)
  })

  it("never claims that recovery happened, for any cause", () => {
    for (const cause of [
      "agentCancelled",
      "timedOut",
      "failed",
      "launchFailed",
      "controllerInterrupted"
    ] as const) {
      expect(fallbackMessage(intent({ cause }, cause)).content).not.toMatch(OVERCLAIMS)
    }
  })

  it("handoff facts never describe the run as terminal", () => {
    const { content } = fallbackMessage(
      intent(
        { handoff: true, observedState: "handoff", cause: "claimLost", reason: "lease taken by runner B" },
        "claimLost"
      )
    )
    expect(content).toMatch(/another runner may continue it/)
    expect(content).toMatch(/does not mean the run has ended/)
    expect(content).not.toMatch(/recorded as|\b(failed|cancelled|timed[ _]out|finished|terminal)\b/)
    expect(content).not.toMatch(OVERCLAIMS)
  })

  it("a non-terminal observed state is reported as observed, not as an outcome", () => {
    const { content } = fallbackMessage(intent({ observedState: "interrupted" }, "controllerInterrupted"))
    expect(content).toContain('The last observed state is "interrupted"')
    expect(content).not.toContain("recorded as")
  })

  it("optional facts are left out when unknown; $launch is explained", () => {
    const { content } = fallbackMessage(
      intent({ nodeId: "$launch", attemptId: null, reason: null, cause: "launchFailed" }, "launchFailed")
    )
    expect(content).toContain("$launch (before any node ran)")
    expect(content).not.toContain("attempt:")
    expect(content).not.toContain("reason:")
  })

  it("bounds the presentation fields in details", () => {
    const details = fallbackMessage(intent({ workflowName: "w".repeat(5_000) })).details
    expect(String(details.workflowName).length).toBeLessThanOrEqual(200)
  })
})
