import { describe, expect, it } from "vitest"
import { customMessages } from "../harness/session-file.ts"
import { requestIdIn, startScenario } from "./support.ts"

const ONE_STEP = `export default {
  name: "greet",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Say hello and submit {\\"greeting\\": string}." } },
  edges: []
}
`

describe("extension in real Pi", () => {
  it("runs a one-step workflow: start, step prompt, submit, presentation", async () => {
    const s = await startScenario({
      workflows: { "greet.workflow.mjs": ONE_STEP },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "greet" } }] },
        { text: "Started." },
        (request) => {
          const last = request.messages.at(-1)
          const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content)
          return {
            toolCalls: [
              {
                name: "workflow",
                arguments: { action: "submit", requestId: requestIdIn(text), output: { greeting: "hi" } }
              }
            ]
          }
        },
        { text: "Submitted." },
        { text: "Presented." }
      ]
    })
    await s.pi.prompt("run the greet workflow")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    const file = s.pi.sessionFile ?? ""
    const steps = customMessages(file, "pi-workflows-agent-step")
    const presentations = customMessages(file, "pi-workflows-presentation")
    expect(steps).toHaveLength(1)
    expect(presentations).toHaveLength(1)
    expect(customMessages(file, "pi-workflows-deferred-turn")).toHaveLength(0)
    expect(s.mock.requestCount()).toBe(5)
  })
})
