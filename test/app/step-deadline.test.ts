/**
 * A step's timeout is a durable deadline: a run taken over from a dead owner at 80% of its
 * agent step's limit times out after the remaining 20% (TestClock), not after a fresh limit,
 * and the one successor it owes is delivered once. Real SQLite file, fake Pi session.
 */
import { spawnSync } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope, TestClock } from "effect"
import * as App from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { Engine } from "../../src/engine/engine.ts"
import { claimToken, currentOwner } from "../../src/engine/active-run.ts"
import type { PiSession } from "../../src/session/pi-session.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { FALLBACK, STEP } from "./support.ts"
import { duration } from "../../src/domain/text.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

const LIMIT = 10_000

const slow = {
  name: "slow",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Say hello.", timeoutMs: LIMIT } },
  edges: []
}

type Ctx = Context.Context<App.AppServices | PiSession | PiSessionFake>

const inProcess = <A, E>(filename: string, body: (context: Ctx) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.build(
      App.layer({
        database: { filename },
        workflows: [slow]
      }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
    ).pipe(Scope.extend(scope))
    const result = yield* body(context)
    yield* Scope.close(scope, Exit.void)
    return result
  })

const sentOf = (context: Ctx, type: string) =>
  Effect.map(Context.get(context, PiSessionFake).sent, (sent) =>
    sent.filter((record) => record.message.customType === type)
  )

/** Let fibers and SQLite callbacks run without moving the TestClock. */
const yieldMany = Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow(), { discard: true })

const deadPid = () => {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8"
  })
  return Number(child.stdout)
}

/** The durable state a process killed mid-step leaves: running, its claim, the step in flight. */
const orphanedStep = (filename: string) =>
  inProcess(filename, (context) =>
    Effect.gen(function* () {
      const engine = Context.get(context, Engine)
      const runs = Context.get(context, RunStore)
      const started = yield* engine.start({ workflow: "slow", input: null, sessionId: "s1", origin: "tool" })
      const token = claimToken("dead", { ...currentOwner(), pid: deadPid() })
      const fence = { runId: started.runId, token }
      yield* runs.claim({ ...fence, leaseMs: 3_600_000, mode: "activate" })
      yield* runs.startStep(fence, { nodeId: "ask", attemptId: "att-dead" })
      yield* runs.openRequest(fence, { nodeId: "ask", attemptId: "att-dead", requestId: "req-dead" })
      return started.runId
    }).pipe(Effect.orDie)
  )

describe("a step's durable deadline after a takeover", () => {
  it.scoped("taken over at 80% of the limit, the step times out after the remaining 20%; one fallback", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const runId = yield* orphanedStep(filename)
      yield* TestClock.adjust(0.8 * LIMIT)
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const engine = Context.get(context, Engine)
          const fake = Context.get(context, PiSessionFake)
          yield* onSessionStart
          yield* yieldMany
          // The takeover re-sends the step's prompt under a fresh attempt ...
          expect(yield* sentOf(context, STEP)).toHaveLength(1)
          expect((yield* engine.status(runId)).state).toBe("running")
          // ... but the limit keeps counting from the dead owner's start.
          yield* TestClock.adjust(0.2 * LIMIT - 1)
          yield* yieldMany
          expect((yield* engine.status(runId)).state).toBe("running")
          yield* TestClock.adjust(1)
          const done = yield* engine.await(runId)
          expect(done.state).toBe("timed_out")
          expect(done.error?.message).toContain(`timed out after ${duration(LIMIT)}`)
          expect((yield* classifySettle(true)).userHold).toBe(false)
          yield* fake.settle({ aborted: true })
          yield* afterSettle(false)
          yield* yieldMany
          // Later settles deliver nothing more.
          yield* fake.settle()
          yield* afterSettle(false)
          yield* yieldMany
          expect(yield* sentOf(context, FALLBACK)).toHaveLength(1)
          const intents = yield* Context.get(context, TurnIntentStore).list({
            targetSessionId: "s1",
            limit: 10
          })
          expect(intents.map((i) => [i.runId, i.cause, i.resolution])).toEqual([
            [runId, "timedOut", "fallback"]
          ])
        }).pipe(Effect.provide(context), Effect.orDie)
      )
    })
  )

  it.scoped("taken over after the deadline passed, the step times out at once without a new prompt", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const runId = yield* orphanedStep(filename)
      yield* TestClock.adjust(LIMIT + 5_000)
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const engine = Context.get(context, Engine)
          yield* onSessionStart
          const done = yield* engine.await(runId)
          expect(done.state).toBe("timed_out")
          expect(yield* sentOf(context, STEP)).toHaveLength(0)
          yield* Context.get(context, PiSessionFake).settle()
          yield* afterSettle(false)
          yield* yieldMany
          expect(yield* sentOf(context, FALLBACK)).toHaveLength(1)
        }).pipe(Effect.provide(context), Effect.orDie)
      )
    })
  )
})
