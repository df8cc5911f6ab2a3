import { describe, expect, it } from "vitest"
import { resolutionMessageId } from "../../src/domain/identity.ts"
import { findResolvingMessage, isSameMessage, withTurnIntent } from "../../src/delivery/protocol.ts"
import type { BranchMessage } from "../../src/session/pi-session.ts"

const entry = (
  entryId: string,
  customType: string,
  details: unknown,
  content: unknown = "x"
): BranchMessage => ({
  entryId,
  customType,
  content,
  details
})

describe("branch repair", () => {
  const prompt = {
    customType: "pi-workflows-prompt",
    content: "next step",
    display: true,
    details: { runId: "r" }
  }

  it("marks natural messages with the intent and its stable message identity", () => {
    const marked = withTurnIntent(prompt, "deferred-turn:1", "presentation")
    expect(marked.details).toEqual({
      runId: "r",
      turnIntentId: "deferred-turn:1",
      turnMessageId: resolutionMessageId("deferred-turn:1", "presentation")
    })
    expect(prompt.details).toEqual({ runId: "r" })
  })

  it("finds the resolving message and the path it represents", () => {
    const branch = [
      entry("e1", "other", { turnIntentId: 42 }),
      entry("e2", "other", null),
      entry("e3", "pi-workflows-prompt", withTurnIntent(prompt, "i-1", "workflowPrompt").details),
      entry("e4", "pi-workflows-result", withTurnIntent(prompt, "i-2", "presentation").details),
      entry("e5", "pi-workflows-deferred-turn", { schema: "x", turnIntentId: "i-3" })
    ]
    expect(findResolvingMessage(branch, "i-1")).toMatchObject({
      entry: { entryId: "e3" },
      resolution: "workflowPrompt"
    })
    expect(findResolvingMessage(branch, "i-2")?.resolution).toBe("presentation")
    expect(findResolvingMessage(branch, "i-3")?.resolution).toBe("fallback")
    expect(findResolvingMessage(branch, "i-4")).toBeNull()
  })

  it("tells this message apart from another message of the same intent", () => {
    const e = entry("e1", "pi-workflows-prompt", {}, "next step")
    expect(isSameMessage(e, prompt)).toBe(true)
    expect(isSameMessage(e, { ...prompt, content: "a different step" })).toBe(false)
    expect(isSameMessage(entry("e1", "pi-workflows-result", {}, "next step"), prompt)).toBe(false)
  })
})
