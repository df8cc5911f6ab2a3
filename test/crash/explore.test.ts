import { describe, it } from "vitest"
import { CRASH_POINTS } from "../../src/delivery/crash-points.ts"
import { runTrial } from "./pi-crash.ts"

const TRIAGE = `export default {
  name: "triage",
  startAt: "label",
  nodes: { label: { type: "agent", prompt: "Read issue #42 and answer {\\"label\\": \\"bug\\" | \\"feature\\"}.", timeoutMs: null } },
  edges: []
}
`
describe("explore", () => {
  for (const point of CRASH_POINTS) {
    it(`self-cancel ${point}`, async () => {
      const outcome = await runTrial(
        {
          name: "self-cancel",
          workflows: { "triage.workflow.mjs": TRIAGE },
          prompt: "Label issue #42 with the triage workflow.",
          before: [
            { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "triage" } }] },
            { text: "queued" },
            { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] }
          ],
          after: [{ text: "noted the cancellation" }]
        },
        point
      )
      console.log(point, JSON.stringify(outcome, null, 1))
    }, 40_000)
  }
})
