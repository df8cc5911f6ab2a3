/** The record written before a model request that answers a terminal successor. */
import { describe, expect, it } from "vitest"
import { beforeModelRequest } from "../../src/extension/successor-request.ts"

const recorded = (messages: ReadonlyArray<unknown>) => {
  const out: Array<[string, unknown]> = []
  beforeModelRequest(messages, (type, data) => out.push([type, data]))
  return out
}

describe("beforeModelRequest", () => {
  it("records a request whose newest message is a fallback or a presentation", () => {
    const fallback = { role: "custom", customType: "pi-workflows-deferred-turn", content: "x" }
    const presentation = { role: "custom", customType: "pi-workflows-presentation", content: "y" }
    expect(recorded([{ role: "user" }, fallback])).toEqual([
      ["pi-workflows-successor-requested", { answers: "pi-workflows-deferred-turn" }]
    ])
    expect(recorded([presentation])).toHaveLength(1)
  })
  it("records nothing for other requests (a step prompt, a tool result, a user prompt)", () => {
    expect(recorded([{ role: "custom", customType: "pi-workflows-agent-step" }])).toEqual([])
    expect(
      recorded([{ role: "custom", customType: "pi-workflows-deferred-turn" }, { role: "toolResult" }])
    ).toEqual([])
    expect(recorded([])).toEqual([])
  })
})
