/**
 * What a restarted session owes from durable state alone (a new app instance on the same file):
 * the user's hold, intents of ended runs that a crash left unwritten or ineligible, the
 * presentation of a completed run, and the runs of a dead owner process.
 */
import { spawnSync } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as App from "../../src/app/layers.ts"
import type { PiSession } from "../../src/session/pi-session.ts"
import { classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { claimToken } from "../../src/engine/active-run.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { appDatabase, freshLocation } from "../support/backend.ts"
import { eventually, FALLBACK, greet, PRESENTATION, STEP } from "./support.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

const appOn = (filename: string) =>
  Layer.build(
    App.layer({
      database: appDatabase(filename),
      workflows: [greet]
    }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  )

/** Run `body` in an app instance that is closed (the "process" ends) afterwards. */
const inProcess = <A, E>(
  filename: string,
  body: (context: Context.Context<App.AppServices | PiSession | PiSessionFake>) => Effect.Effect<A, E>
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* appOn(filename).pipe(Scope.extend(scope))
    const result = yield* body(context)
    yield* Scope.close(scope, Exit.void)
    return result
  })

const sentOf = (context: Context.Context<PiSessionFake>, type: string) =>
  Effect.map(Context.get(context, PiSessionFake).sent, (sent) =>
    sent.filter((record) => record.message.customType === type)
  )

const newRun = (runId: string) => ({
  runId,
  workflowName: "greet",
  workflowRef: "greet",
  revision: null,
  sourceFingerprint: "f",
  snapshot: {},
  targetSessionId: "s1",
  origin: "tool" as const,
  input: {},
  startAt: "ask",
  maxSteps: 5
})

describe("a restarted session", () => {
  it.live("keeps the user's hold: no fallback, no launch until resume", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          yield* runTool({ _tag: "start", workflow: "greet" })
          yield* Context.get(context, Engine).activate("s1")
          yield* eventually(sentOf(context, STEP), (steps) => steps.length === 1)
          const outcome = yield* classifySettle(true)
          expect(outcome.userHold).toBe(true)
          // Something else is owed to the session meanwhile.
          yield* Context.get(context, TurnIntentStore).ensure(
            sampleIntent({ targetSessionId: "s1", runId: "other-run", eligible: true })
          )
        }).pipe(Effect.provide(context), Effect.orDie)
      )
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const outcome = yield* onSessionStart
          expect(outcome.userHold).toBe(true)
          expect(yield* sentOf(context, FALLBACK)).toHaveLength(0)
        }).pipe(Effect.provide(context))
      )
    }).pipe(Effect.scoped)
  )

  it.live("pays a failed run's debt a crash left unwritten, and makes stranded intents eligible, once", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const runs = Context.get(context, RunStore)
          // Run 1 failed durably; the process died before its intent was written.
          yield* runs.reserve(newRun("run-failed"))
          yield* runs.claim({ runId: "run-failed", token: "t1", leaseMs: 60_000, mode: "activate" })
          yield* runs.settle(
            { runId: "run-failed", token: "t1" },
            {
              next: {
                _tag: "End",
                state: "failed",
                error: { message: "boom", nodeId: "ask", original: null }
              }
            }
          )
          // Run 2: an abort's intent exists (ineligible); the agent cancelled the run without a
          // terminal event. (The user's direct cancel would retire it: no turn.)
          yield* runs.reserve({ ...newRun("run-cancelled"), targetSessionId: "s1" })
          yield* Context.get(context, TurnIntentStore).ensure(
            sampleIntent({ targetSessionId: "s1", runId: "run-cancelled", cause: "timedOut" })
          )
          yield* runs.claim({ runId: "run-cancelled", token: "t2", leaseMs: 60_000, mode: "activate" })
          yield* runs.settle(
            { runId: "run-cancelled", token: "t2" },
            { next: { _tag: "End", state: "cancelled", cancelledBy: "agent" } }
          )
        }).pipe(Effect.orDie)
      )
      for (let start = 0; start < 2; start++) {
        yield* inProcess(filename, (context) =>
          Effect.gen(function* () {
            const fake = Context.get(context, PiSessionFake)
            yield* onSessionStart
            // One fallback per pass; the next settle sends the next one.
            for (let i = 0; i < 3; i++) {
              yield* fake.settle()
              yield* Effect.flatMap(Engine, () => Effect.void)
            }
            const intents = yield* Context.get(context, TurnIntentStore).list({
              targetSessionId: "s1",
              limit: 10
            })
            expect(intents.map((i) => [i.runId, i.cause, i.eligibleAt !== null]).sort()).toEqual([
              ["run-cancelled", "timedOut", true],
              ["run-failed", "failed", true]
            ])
          }).pipe(Effect.provide(context), Effect.orDie)
        )
      }
    }).pipe(Effect.scoped)
  )

  it.live("a completed run whose terminal intent a crash left unwritten gets one fallback turn, once", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const runs = Context.get(context, RunStore)
          yield* runs.reserve(newRun("run-done"))
          yield* runs.claim({ runId: "run-done", token: "t1", leaseMs: 60_000, mode: "activate" })
          yield* runs.settle(
            { runId: "run-done", token: "t1" },
            { next: { _tag: "End", state: "completed", result: { answer: 42 } } }
          )
        }).pipe(Effect.orDie)
      )
      const terminalMessages = (context: Context.Context<PiSessionFake>) =>
        Effect.map(
          Effect.all([sentOf(context, PRESENTATION), sentOf(context, FALLBACK)]),
          ([presented, fallbacks]) => [...presented, ...fallbacks]
        )
      const first = yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          yield* onSessionStart
          return yield* terminalMessages(context)
        }).pipe(Effect.provide(context))
      )
      // The run's end is durable: its terminal turn intent is created at session start and its
      // fallback carries the terminal decision with the result.
      expect(first).toHaveLength(1)
      expect(first[0]?.message.customType).toBe(FALLBACK)
      expect(first[0]?.message.details).toMatchObject({ runId: "run-done", cause: "completed" })
      expect(String(first[0]?.message.content)).toContain("42")
      const second = yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          yield* onSessionStart
          return yield* terminalMessages(context)
        }).pipe(Effect.provide(context))
      )
      expect(second).toHaveLength(0)
    }).pipe(Effect.scoped)
  )

  it.live("a completed run an earlier version already presented (no intent) owes nothing", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const runs = Context.get(context, RunStore)
          yield* runs.reserve(newRun("run-old"))
          yield* runs.claim({ runId: "run-old", token: "t1", leaseMs: 60_000, mode: "activate" })
          yield* runs.settle(
            { runId: "run-old", token: "t1" },
            { next: { _tag: "End", state: "completed", result: { answer: 42 } } }
          )
          yield* runs.recordEvent("run-old", { kind: "presented", message: "presentation sent" })
        }).pipe(Effect.orDie)
      )
      const after = yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          yield* onSessionStart
          const sent = yield* Context.get(context, PiSessionFake).sent
          const intents = yield* Context.get(context, TurnIntentStore).list({ limit: 10 })
          return { sent: sent.length, intents: intents.length }
        }).pipe(Effect.provide(context), Effect.orDie)
      )
      expect(after).toEqual({ sent: 0, intents: 0 })
    }).pipe(Effect.scoped)
  )

  it.live("takes over a run whose owner process is dead, before its lease expires", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      // A process that has exited: its pid names a dead owner on this machine.
      const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
        encoding: "utf8"
      })
      const deadPid = Number(child.stdout)
      expect(deadPid).toBeGreaterThan(0)
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const runs = Context.get(context, RunStore)
          yield* runs.reserve({ ...newRun("run-orphan"), sourceFingerprint: "x" })
          const self = (yield* Effect.sync(() => ({ pid: process.pid }))).pid
          expect(self).not.toBe(deadPid)
        }).pipe(Effect.orDie)
      )
      yield* inProcess(filename, (context) =>
        Effect.gen(function* () {
          const engine = Context.get(context, Engine)
          // Start greet properly so the fingerprint matches, then hand its claim to the dead pid.
          const runs = Context.get(context, RunStore)
          yield* runs.cancel("run-orphan", "user")
          const started = yield* engine.start({
            workflow: "greet",
            input: null,
            sessionId: "s1",
            origin: "tool"
          })
          const { currentOwner } = yield* Effect.promise(() => import("../../src/engine/active-run.ts"))
          const token = claimToken("dead", { ...currentOwner(), pid: deadPid })
          yield* runs.claim({ runId: started.runId, token, leaseMs: 3_600_000, mode: "activate" })
          const busy = yield* Effect.either(engine.resume(started.runId))
          expect(busy._tag).toBe("Left")
          const report = yield* engine.recover("s1")
          expect(report.resumed.map((r) => r.runId)).toEqual([started.runId])
          yield* eventually(sentOf(context, STEP), (steps) => steps.length === 1)
        }).pipe(Effect.provide(context), Effect.orDie)
      )
    }).pipe(Effect.scoped)
  )
})
