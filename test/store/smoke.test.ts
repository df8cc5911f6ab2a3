import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sqlite.ts"
import { tempDbPath } from "../support/temp-db.ts"

const facts = {
  schema: "pi-workflows.deferred-turn-facts.v1" as const,
  workflowName: "demo",
  runId: "run-1",
  observedState: "cancelled",
  cause: "agentCancelled",
  nodeId: "n1",
  attemptId: "a1",
  reason: null,
  handoff: false
}

describe("smoke", () => {
  it.scoped("ensure, claim, resolve", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const ctx = yield* Layer.build(layerSqlite({ filename: path }))
      const store = yield* Effect.provide(TurnIntentStore, ctx)
      yield* TestClock.setTime(1_000_000)
      const intent = yield* store.ensure({
        sourceEventId: "se-1",
        runId: "run-1",
        workflowRef: "demo",
        targetSessionId: "s1",
        cause: "agentCancelled",
        nodeId: "n1",
        attemptId: "a1",
        facts
      })
      expect(intent.intentId).toMatch(/^deferred-turn:[0-9a-f]{64}$/)
      const claimed = yield* store.claimForRun({
        runId: "run-1",
        targetSessionId: "s1",
        token: "t",
        leaseMs: 1000
      })
      expect(Option.isSome(claimed)).toBe(true)
      const resolved = yield* store.resolve({
        intentId: intent.intentId,
        token: "t",
        resolution: "fallback",
        messageId: "m"
      })
      expect(resolved.resolution).toBe("fallback")
    })
  )
})
