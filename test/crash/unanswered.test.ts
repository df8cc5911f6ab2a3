/**
 * A successor that Pi wrote but never answered: Pi is killed (SIGKILL, crash point
 * `beforeSuccessorRequest`) after it appended the fallback to the session file and right before
 * the model request for it. The restarted Pi must give it exactly one model turn without a
 * second copy of the message: a hidden trigger that no model request contains. And the other
 * side of that moment: killed right after the record that the request was sent
 * (`afterSuccessorRequest`), the model had the request, so the restart asks nothing again.
 */
import { describe, expect, it } from "vitest"
import { AFTER_SUCCESSOR_REQUEST, BEFORE_SUCCESSOR_REQUEST } from "../../src/delivery/unanswered-successor.ts"
import { runTrial, type Trial } from "./pi-crash.ts"

const TRIAGE = `export default {
  name: "triage",
  startAt: "label",
  nodes: { label: { type: "agent", prompt: "Read issue #42 and answer {\\"label\\": \\"bug\\" | \\"feature\\"}.", timeoutMs: null } },
  edges: []
}
`

const selfCancel: Trial = {
  name: "fallback",
  workflows: { "triage.workflow.mjs": TRIAGE },
  prompt: "Label issue #42 with the triage workflow.",
  before: [
    { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "triage" } }] },
    { text: "Queued." },
    { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] }
  ],
  after: [{ text: "The triage run was cancelled." }, { text: "(a second answer: must not happen)" }]
}

describe("a successor written but never answered (real Pi)", () => {
  it("killed between the fallback's append and its model request: one copy, one model turn", async () => {
    const outcome = await runTrial(selfCancel, BEFORE_SUCCESSOR_REQUEST)
    console.log(
      `unanswered: ${outcome.signal}, types ${outcome.messageTypes.join(",")}, requests ${outcome.requests}, ` +
        `answers ${JSON.stringify(outcome.answersPerIntent)}, ${Math.round(outcome.elapsedMs)} ms`
    )
    expect(outcome.signal).toBe("SIGKILL")
    expect(outcome.intents.map((i) => [i.cause, i.resolution])).toEqual([["agentCancelled", "fallback"]])
    expect(Object.values(outcome.messagesPerIntent)).toEqual([1])
    expect(outcome.messageTypes.filter((t) => t === "pi-workflows-deferred-turn")).toHaveLength(1)
    // Exactly one model request has the fallback as its newest message (the trigger is dropped).
    expect(Object.values(outcome.answersPerIntent)).toEqual([1])
    expect(outcome.messageTypes.filter((t) => t === "pi-workflows-turn-trigger")).toHaveLength(1)
    expect(outcome.requests).toBe(4) // start, "queued", cancel, the one fallback turn (after the restart)
  }, 60_000)

  it("a later restart (after the triggered turn) starts no second turn for it", async () => {
    const outcome = await runTrial(selfCancel, BEFORE_SUCCESSOR_REQUEST, { extraRestarts: 1 })
    expect(outcome.signal).toBe("SIGKILL")
    expect(Object.values(outcome.messagesPerIntent)).toEqual([1])
    expect(Object.values(outcome.answersPerIntent)).toEqual([1])
    expect(outcome.messageTypes.filter((t) => t === "pi-workflows-turn-trigger")).toHaveLength(1)
    expect(outcome.requests).toBe(4)
  }, 90_000)

  it("killed again between the trigger's append and its request: the next start triggers once more, one model turn", async () => {
    const outcome = await runTrial(selfCancel, BEFORE_SUCCESSOR_REQUEST, { crashAgain: true })
    expect(outcome.signal).toBe("SIGKILL")
    expect(Object.values(outcome.messagesPerIntent)).toEqual([1])
    expect(Object.values(outcome.answersPerIntent)).toEqual([1])
    expect(outcome.messageTypes.filter((t) => t === "pi-workflows-turn-trigger")).toHaveLength(2)
    expect(outcome.requests).toBe(4)
  }, 90_000)

  it("killed right after the record that the fallback's request was sent: the model had it, no second turn", async () => {
    const outcome = await runTrial(selfCancel, AFTER_SUCCESSOR_REQUEST)
    console.log(
      `requested: ${outcome.signal}, types ${outcome.messageTypes.join(",")}, requests ${outcome.requests}, ` +
        `answers ${JSON.stringify(outcome.answersPerIntent)}`
    )
    expect(outcome.signal).toBe("SIGKILL")
    expect(Object.values(outcome.messagesPerIntent)).toEqual([1])
    // The request recorded as sent reached the model before Pi died (its reply died with Pi).
    expect(Object.values(outcome.answersPerIntent)).toEqual([1])
    expect(outcome.messageTypes.filter((t) => t === "pi-workflows-turn-trigger")).toHaveLength(0)
    expect(outcome.requests).toBe(4) // start, "queued", cancel, the fallback's request before the kill
  }, 60_000)
})
