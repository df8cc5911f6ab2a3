import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { eventTags, makeHarness, SESSION } from "./support/harness.ts"

const wf = {
  name: "smoke",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "Say something" },
    done: { type: "compute", run: (ctx: { outputs: Record<string, unknown> }) => ({ said: ctx.outputs.ask }) }
  },
  edges: [{ from: "ask", to: "done" }]
}

describe("smoke", () => {
  it.scoped("runs", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [wf] })
      const runId = yield* h.launch("smoke")
      const prompt = yield* h.coordinator.take
      const requestId = String(prompt.message.details.requestId)
      const receipt = yield* h.engine.submit({ sessionId: SESSION, requestId, output: "hi" })
      expect(receipt.requestId).toBe(requestId)
      const done = yield* h.engine.await(runId)
      expect(done.state).toBe("completed")
      expect(done.result).toEqual({ said: "hi" })
      const presentation = yield* h.coordinator.take
      expect(presentation.kind).toBe("presentation")
      expect(eventTags(yield* h.events)).toEqual([])
    })
  )
})
