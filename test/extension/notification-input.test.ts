import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import { withoutHidden } from "../../src/extension/model-request.ts"
import { decodeToolInput } from "../../src/app/tool.ts"
import { TOOL_ACTIONS, toolParameters } from "../../src/extension/tool-parameters.ts"

describe("the progress action's input", () => {
  it("is an action the model is shown, with requestId and text", () => {
    expect(TOOL_ACTIONS).toContain("progress")
    expect(Object.keys(toolParameters.properties)).toEqual(expect.arrayContaining(["requestId", "text"]))
  })

  it("decodes requestId and text, and names what is missing or extra", () => {
    expect(decodeToolInput({ action: "progress", requestId: "req-1", text: "half way" })).toEqual(
      Either.right({ _tag: "progress", requestId: "req-1", text: "half way" })
    )
    const left = (params: unknown) => Either.getLeft(decodeToolInput(params))._tag === "Some"
    expect(left({ action: "progress", requestId: "req-1" })).toBe(true)
    expect(left({ action: "progress", text: "x" })).toBe(true)
    expect(left({ action: "progress", requestId: "req-1", text: 42 })).toBe(true)
    expect(decodeToolInput({ action: "progress", requestId: "req-1", text: "x", output: 1 })).toEqual(
      Either.left("workflow progress: output is not a parameter of this action")
    )
  })
})

describe("the model's context", () => {
  it("never includes notifications; other messages stay as they are, in order", () => {
    const user = { role: "user", content: "hi" }
    const step = { role: "custom", customType: "pi-workflows-agent-step", content: "do it" }
    const notice = { role: "custom", customType: NOTIFICATION_TYPE, content: "progress" }
    expect(withoutHidden([user, notice, step, notice])).toEqual([user, step])
    // Nothing to remove: Pi keeps its own list.
    expect(withoutHidden([user, step])).toBeUndefined()
  })
})
