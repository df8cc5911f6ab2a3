/**
 * A completed run owns one terminal turn intent (fake session, real SQLite file): its
 * presentation resolves it; when the presentation never reaches the session the intent's
 * fallback, with the result and the terminal decision, is the run's one terminal turn.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { reconcileSession, afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import { Engine } from "../../src/engine/engine.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import {
  buildApp,
  eventually,
  FALLBACK,
  lastRequestId,
  PRESENTATION,
  sentOfType,
  STEP
} from "../app/support.ts"

const intents = Effect.orDie(Effect.flatMap(TurnIntentStore, (store) => store.list({ limit: 100 })))

describe("a completed run's terminal turn intent", () => {
  it.live("a presentation that never reaches the session becomes the intent's fallback, once", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      const runId = String(started.details.runId)
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      // Every presentation send fails (all retries): the message never reaches the session.
      yield* fake.failSendsWhen((message) => message.customType === PRESENTATION)
      yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: { hi: 1 } })
      yield* fake.settle()
      yield* eventually(fake.failedSends, (n) => n >= 4)
      const [pending] = yield* eventually(intents, (found) => found.length === 1)
      expect([pending?.cause, pending?.resolvedAt]).toEqual(["completed", null])
      // The next reconciliation pass finds the intent stranded: eligible, and the fallback goes.
      yield* Effect.orDie(reconcileSession)
      yield* Effect.orDie(Effect.flatMap(Coordinator, (c) => c.syncFallbacks("periodic")))
      const [fallback] = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      expect(fallback?.message.details).toMatchObject({
        runId,
        cause: "completed",
        observedState: "completed"
      })
      expect(fallback?.message.content).toContain('"hi": 1')
      expect(fallback?.message.content).toContain("Default: stop")
      // Nothing more, however often the debts are paid again.
      yield* Effect.orDie(reconcileSession)
      yield* afterSettle(false)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(1)
      expect(yield* sentOfType(PRESENTATION)).toHaveLength(0)
      expect((yield* intents).map((i) => [i.cause, i.resolution])).toEqual([["completed", "fallback"]])
      const status = yield* Effect.orDie(Effect.flatMap(Engine, (engine) => engine.status(runId)))
      expect(status.state).toBe("completed")
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})
