/**
 * Real Pi: what the model gets back for hostile `workflow` tool arguments is one short line.
 * A 5 MB unknown action came back as a 5 MB tool error (Pi's own validation repeated every
 * argument), 20,000 unknown parameters as 1.8 MB, and deep JSON was accepted as a run input.
 * The model's next request shows the tool results it got. (JSON nested 5,000 deep never reaches
 * a tool in Pi 1.6: Pi's streaming parse of the tool call overflows first and the model's
 * message ends in an error; 1,500 levels is what Pi itself still carries.)
 */
import { describe, expect, it } from "vitest"
import { contentText } from "../harness/mock-openai.ts"
import { startScenario } from "./support.ts"

const GREET = `export default {
  name: "greet",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Say hello." } },
  edges: []
}
`

/** `{"a": {"a": … 1 …}}` as JSON text: too deep for JSON.stringify to write. */
const nestedJson = (levels: number): string => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`

describe("hostile tool arguments in real Pi", () => {
  it("a 5 MB unknown action, 20,000 unknown parameters and 1,500-deep input each get a short tool error", async () => {
    const unknown: Record<string, unknown> = { action: "list" }
    for (let i = 0; i < 20_000; i++) unknown[`p${i}`] = i
    const s = await startScenario({
      workflows: { "greet.workflow.mjs": GREET },
      script: [
        {
          toolCalls: [
            { name: "workflow", arguments: { action: "x".repeat(5_000_000) } },
            { name: "workflow", arguments: unknown },
            {
              name: "workflow",
              arguments: {},
              argumentsJson: `{"action":"start","workflow":"greet","input":${nestedJson(1_500)}}`
            }
          ]
        },
        { text: "I will fix my tool calls." }
      ]
    })
    await s.pi.prompt("use the workflow tool")
    await s.pi.waitForQuiet({ timeoutMs: 60_000, quietMs: 400 })
    expect(s.mock.requestCount()).toBe(2)
    const results = (s.mock.requests()[1]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => contentText(message.content))
    expect(results).toEqual([
      `workflow: unknown action "${"x".repeat(40)}"… (5,000,000 characters) (one of list, start, status, cancel, submit, progress, restart, answer)`,
      "workflow list: p0, p1, p2 and 19,997 more unknown parameters are not parameters of this action",
      "workflow start: input nests arrays and objects more than 64 levels deep; at most 64 levels are accepted, so send flatter JSON"
    ])
    for (const text of results) expect([...text].length).toBeLessThanOrEqual(2_000)
    // Nothing was started.
    expect(s.runs()).toEqual([])
  }, 120_000)
})
