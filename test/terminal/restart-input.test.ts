import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { decodeToolInput } from "../../src/app/tool.ts"
import { TOOL_ACTIONS, toolParameters } from "../../src/extension/tool-parameters.ts"

describe("workflow restart input", () => {
  it("is an action of the tool schema and needs exactly one runId", () => {
    expect(TOOL_ACTIONS).toContain("restart")
    expect(JSON.stringify(toolParameters)).toContain("restart")
    expect(decodeToolInput({ action: "restart", runId: "r1" })).toEqual(
      Either.right({ _tag: "restart", runId: "r1" })
    )
    expect(decodeToolInput({ action: "restart" })).toEqual(Either.left("workflow restart: runId is missing"))
    expect(Either.isLeft(decodeToolInput({ action: "restart", runId: "" }))).toBe(true)
    expect(decodeToolInput({ action: "restart", runId: "r1", input: {} })).toEqual(
      Either.left("workflow restart: input is not a parameter of this action")
    )
  })
})
