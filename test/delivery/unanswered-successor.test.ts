/** When a restarted Pi owes a successor its model turn, and when it must not (pure). */
import { describe, expect, it } from "@effect/vitest"
import {
  type TailEntry,
  triggerMessage,
  unansweredSuccessor
} from "../../src/delivery/unanswered-successor.ts"
import { withoutHidden } from "../../src/extension/model-request.ts"

const custom = (entryId: string, customType: string, details: unknown = {}): TailEntry => ({
  _tag: "Custom",
  entryId,
  customType,
  details
})
const fallback = (entryId: string) => custom(entryId, "pi-workflows-deferred-turn", { turnIntentId: "i1" })
const presentation = (entryId: string) => custom(entryId, "pi-workflows-presentation", { runId: "r1" })
const assistant: TailEntry = { _tag: "Message", role: "assistant" }
const user: TailEntry = { _tag: "Message", role: "user" }
const other: TailEntry = { _tag: "Other" }
const notification = custom("n", "pi-workflows-notification")
const trigger = custom("t", "pi-workflows-turn-trigger", { answers: "f" })

describe("unansweredSuccessor", () => {
  it("a fallback or a presentation last in the branch, with no reply after it, gets a trigger", () => {
    expect(unansweredSuccessor([user, assistant, fallback("f")])).toEqual({ _tag: "Trigger", entryId: "f" })
    expect(unansweredSuccessor([user, presentation("p"), other, notification])).toEqual({
      _tag: "Trigger",
      entryId: "p"
    })
  })
  it("never twice: the model request for it was recorded as sent (the reply may have died with Pi)", () => {
    const requested: TailEntry = { _tag: "State", customType: "pi-workflows-successor-requested" }
    const state: TailEntry = { _tag: "State", customType: "someone-elses-state" }
    expect(unansweredSuccessor([fallback("f"), requested])).toEqual({ _tag: "None", why: "requested" })
    expect(unansweredSuccessor([presentation("p"), requested, notification])._tag).toBe("None")
    expect(unansweredSuccessor([fallback("f"), state])).toEqual({ _tag: "Trigger", entryId: "f" })
  })
  it("a trigger whose request was sent is not repeated; one that died with Pi before its request is", () => {
    const requested: TailEntry = { _tag: "State", customType: "pi-workflows-successor-requested" }
    expect(unansweredSuccessor([fallback("f"), trigger, requested])).toEqual({
      _tag: "None",
      why: "requested"
    })
    expect(unansweredSuccessor([fallback("f"), trigger, requested, notification, other])._tag).toBe("None")
    expect(unansweredSuccessor([fallback("f"), trigger])).toEqual({ _tag: "Trigger", entryId: "f" })
    expect(unansweredSuccessor([fallback("f"), trigger, notification, trigger])).toEqual({
      _tag: "Trigger",
      entryId: "f"
    })
  })
  it("answered or overtaken: a model reply, a user message or a summary after it", () => {
    expect(unansweredSuccessor([fallback("f"), assistant])).toEqual({ _tag: "None", why: "answered" })
    expect(unansweredSuccessor([presentation("p"), user])._tag).toBe("None")
    expect(unansweredSuccessor([fallback("f"), { _tag: "Message", role: "compaction" }])._tag).toBe("None")
  })
  it("not a terminal successor: a step prompt (a taken-over run prompts again), a fallback without intent, another extension's message", () => {
    expect(unansweredSuccessor([custom("s", "pi-workflows-agent-step", { turnIntentId: "i" })])).toEqual({
      _tag: "None",
      why: "notOurs"
    })
    expect(unansweredSuccessor([custom("f", "pi-workflows-deferred-turn", {})])._tag).toBe("None")
    expect(unansweredSuccessor([fallback("f"), custom("x", "someone-else")])._tag).toBe("None")
    expect(unansweredSuccessor([other, notification])).toEqual({ _tag: "None", why: "empty" })
  })
  it("the trigger is hidden and every model request drops it, so the successor is the newest message", () => {
    const message = triggerMessage("f")
    expect(message.display).toBe(false)
    const request = [
      { role: "user", content: "go" },
      { role: "custom", customType: "pi-workflows-deferred-turn", content: "The run ended." },
      { role: "custom", customType: message.customType, content: message.content }
    ]
    expect(withoutHidden(request)).toEqual(request.slice(0, 2))
  })
})
