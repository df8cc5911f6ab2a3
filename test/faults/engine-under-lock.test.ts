/**
 * The engine joins under a write lock held by another process (a real second process; on
 * PostgreSQL its session holds the tables' locks, test/faults/backend-faults.ts): every
 * interruption path aborts the turn while the lock is held, tool replies stay readable errors
 * or answers (never a crash), and once the lock is gone the run reaches its durable end with
 * one successor for the interruption.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as App from "../../src/app/layers.ts"
import { runTool } from "../../src/app/tool.ts"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { eventually, FALLBACK, STEP } from "../app/support.ts"
import { appDatabase } from "../support/backend.ts"
import { faultLocation, holdLockInProcess, LOCKED } from "./backend-faults.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

const slow = {
  name: "slow",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: 400 } },
  edges: []
}
const patient = {
  name: "patient",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: 600_000 } },
  edges: []
}

const app = (location: string) =>
  Layer.build(
    App.layer({
      database: { ...appDatabase(location), busyTimeoutMs: 5_000 },
      workflows: [slow, patient]
    }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  )

const started = (context: Context.Context<Engine | PiSessionFake>, workflow: string) =>
  Effect.gen(function* () {
    const engine = Context.get(context, Engine)
    const fake = Context.get(context, PiSessionFake)
    const run = yield* engine.start({ workflow, input: {}, sessionId: "s1", origin: "tool" })
    yield* engine.activate("s1")
    yield* eventually(
      Effect.map(fake.sent, (sent) => sent.filter((r) => r.message.customType === STEP)),
      (steps) => steps.length === 1
    )
    return run.runId
  })

describe("interruptions while another process holds the write lock", () => {
  it.live("a step timeout aborts the turn under the lock; the run ends timed_out afterwards", () =>
    Effect.gen(function* () {
      const location = yield* faultLocation
      const context = yield* app(location)
      const fake = Context.get(context, PiSessionFake)
      const runs = Context.get(context, RunStore)
      const intents = Context.get(context, TurnIntentStore)
      const runId = yield* started(context, "slow")
      const lock = yield* Scope.make()
      yield* holdLockInProcess(location).pipe(Scope.extend(lock))
      // The timeout fires while the lock is held: the turn is aborted anyway.
      yield* eventually(fake.aborts, (n) => n === 1)
      yield* Scope.close(lock, Exit.void)
      yield* eventually(
        Effect.orDie(
          Effect.map(runs.get(runId), (run) => run._tag === "Some" && run.value.state === "timed_out")
        ),
        (ended) => ended
      )
      const stored = yield* eventually(
        Effect.orDie(intents.list({ runId, limit: 10 })),
        (list) => list.length > 0 && list.every((i) => i.eligibleAt !== null)
      )
      expect(stored.map((i) => i.cause)).toEqual(["timedOut"])
      yield* fake.settle({ aborted: true })
      yield* Context.get(context, Coordinator).syncFallbacks("settled")
      const fallbacks = (yield* fake.sent).filter((r) => r.message.customType === FALLBACK)
      expect(fallbacks).toHaveLength(1)
    }).pipe(Effect.scoped)
  )

  it.live("the agent's cancel under the lock aborts the turn and replies; the run ends cancelled", () =>
    Effect.gen(function* () {
      const location = yield* faultLocation
      const context = yield* app(location)
      const fake = Context.get(context, PiSessionFake)
      const runs = Context.get(context, RunStore)
      const runId = yield* started(context, "patient")
      const lock = yield* Scope.make()
      yield* holdLockInProcess(location).pipe(Scope.extend(lock))
      const release = Effect.zipRight(
        eventually(fake.aborts, (n) => n === 1),
        Scope.close(lock, Exit.void)
      )
      const [reply] = yield* Effect.all(
        [runTool({ _tag: "cancel", runId }).pipe(Effect.provide(context)), release],
        { concurrency: 2 }
      )
      expect(typeof reply.text).toBe("string")
      expect(yield* fake.aborts).toBe(1)
      yield* eventually(
        Effect.orDie(
          Effect.map(runs.get(runId), (run) => run._tag === "Some" && run.value.state === "cancelled")
        ),
        (ended) => ended
      )
    }).pipe(Effect.scoped)
  )

  it.live("submit and cancel under a lock that outlasts the busy budget reply with readable errors", () =>
    Effect.gen(function* () {
      const location = yield* faultLocation
      const context = yield* Layer.build(
        App.layer({
          database: { ...appDatabase(location), busyTimeoutMs: 50 },
          workflows: [patient]
        }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
      )
      const runId = yield* started(context, "patient")
      const fake = Context.get(context, PiSessionFake)
      const requestId = (yield* fake.sent).find((r) => r.message.customType === STEP)?.message.details
        .requestId
      expect(typeof requestId).toBe("string")
      const lock = yield* Scope.make()
      yield* holdLockInProcess(location).pipe(Scope.extend(lock))
      const submit = yield* runTool({ _tag: "submit", requestId: String(requestId), output: 1 }).pipe(
        Effect.provide(context)
      )
      expect(submit.isError).toBe(true)
      expect(submit.text).toMatch(/^workflow submit failed: /)
      expect(submit.text).toMatch(LOCKED)
      expect(submit.details.error).toBe("StoreFailure")
      yield* Scope.close(lock, Exit.void)
      const status = yield* runTool({ _tag: "status", runId }).pipe(Effect.provide(context))
      expect(status.isError).toBe(false)
    }).pipe(Effect.scoped)
  )
})
