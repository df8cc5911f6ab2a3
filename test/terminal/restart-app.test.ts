/**
 * `restart` and the terminal turn's one launch, on the whole app over the fake session and a
 * real SQLite file: exact reuse, immutable parents, lineage, every refusal writes nothing, one
 * launch per terminal turn, activation only after settle, idempotent repeats across a reload.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as App from "../../src/app/layers.ts"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { appDatabase, freshLocation } from "../support/backend.ts"
import { eventually, FALLBACK, sentOfType } from "../app/support.ts"
import { crashing } from "../support/workflows.ts"
import { triggerMessage } from "../../src/delivery/unanswered-successor.ts"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import { NoSyncPass } from "../support/timing.ts"

const crash = {
  ...crashing("service unavailable"),
  revision: 1,
  input: (input: unknown) => (typeof input === "object" && input !== null ? true : "input must be an object")
}

/** Fails differently every time: the chain makes progress. */
const progressing = () => {
  let calls = 0
  return {
    name: "progressing",
    startAt: "work",
    nodes: {
      work: {
        type: "compute",
        run: () => {
          calls += 1
          throw new Error(`failed at item ${calls}`)
        }
      }
    },
    edges: []
  }
}

const monitor = {
  name: "monitor",
  startAt: "watch",
  nodes: { watch: { type: "agent", prompt: "Watch the build." } },
  edges: []
}

const app = (filename: string) =>
  App.layer({
    database: appDatabase(filename),
    workflows: [crash, progressing(), monitor]
  }).pipe(Layer.provide(NoSyncPass), Layer.provideMerge(layerFake({ sessionId: "s1" })))

const withApp = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(freshLocation, (filename) => Effect.provide(effect, app(filename))).pipe(Effect.scoped)

const runIdOf = (details: Readonly<Record<string, unknown>>) => {
  const runId = details.runId
  if (typeof runId !== "string") throw new Error(`no run id in ${JSON.stringify(details)}`)
  return runId
}

const allRuns = Effect.flatMap(RunStore, (store) => store.listBySession("s1", 100))
const stateOf = (runId: string) =>
  Effect.flatMap(Engine, (engine) => Effect.map(Effect.orDie(engine.status(runId)), (s) => s.state))

/** The model's turn ends: Pi settles, then the app activates what the turn queued. */
const settle = Effect.gen(function* () {
  yield* (yield* PiSessionFake).settle()
  yield* afterSettle(false)
})

/** Wait until the run ended and its terminal fallback (the terminal turn) was sent. */
const awaitTerminalTurn = (runId: string, fallbacksBefore: number) =>
  Effect.gen(function* () {
    yield* eventually(stateOf(runId), (state) => state === "failed")
    yield* afterSettle(false)
    yield* eventually(sentOfType(FALLBACK), (sent) => sent.length === fallbacksBefore + 1)
  })

/** Start a workflow from an idle session and wait for its terminal turn. */
const failOnce = (workflow: string, input: unknown = { a: 1 }) =>
  Effect.gen(function* () {
    const before = (yield* sentOfType(FALLBACK)).length
    const started = yield* runTool({ _tag: "start", workflow, input })
    expect(started.isError).toBe(false)
    const runId = runIdOf(started.details)
    yield* settle
    yield* awaitTerminalTurn(runId, before)
    return runId
  })

/** In the terminal turn: restart, end the turn, wait for the restarted run's terminal turn. */
const restartAndFail = (runId: string, toolCallId: string) =>
  Effect.gen(function* () {
    const before = (yield* sentOfType(FALLBACK)).length
    const reply = yield* runTool({ _tag: "restart", runId }, { toolCallId })
    if (reply.isError) return { reply, runId: null }
    const next = runIdOf(reply.details)
    yield* settle
    yield* awaitTerminalTurn(next, before)
    return { reply, runId: next }
  })

describe("restart", () => {
  it.live(
    "reuses the exact workflow and input, leaves the parent unchanged, records lineage, starts after settle",
    () =>
      withApp(
        Effect.gen(function* () {
          const input = { a: 1, nested: { list: [1, "two", null] } }
          const first = yield* failOnce("crash", input)
          const store = yield* RunStore
          const before = Option.getOrThrow(yield* store.get(first))
          const reply = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
          expect(reply.isError).toBe(false)
          expect(reply.text).toMatch(/Restarted as run/)
          const second = runIdOf(reply.details)
          // Reserved only: it starts after the terminal turn settles.
          expect(yield* stateOf(second)).toBe("queued")
          const created = Option.getOrThrow(yield* store.get(second))
          expect(created.input).toEqual(input)
          expect(created.workflowRef).toBe(before.workflowRef)
          expect(created.sourceFingerprint).toBe(before.sourceFingerprint)
          expect(Option.getOrThrow(yield* store.get(first))).toEqual(before)
          const launch = Option.getOrThrow(yield* (yield* LaunchStore).get(second))
          expect(launch.kind).toBe("restart")
          expect(launch.terminalRunId).toBe(first)
          expect(launch.launch.lineage).toMatchObject({
            rootRunId: first,
            parentRunId: first,
            restartNumber: 1
          })
          const status = yield* runTool({ _tag: "status", runId: second })
          expect(status.text).toContain(`restart 1/3 of chain root ${first}`)
          yield* settle
          yield* eventually(stateOf(second), (state) => state === "failed")
        })
      )
  )

  it.live(
    "a repeated tool call returns the same run; a second launch in the same turn is refused and writes nothing",
    () =>
      withApp(
        Effect.gen(function* () {
          const first = yield* failOnce("crash")
          const reply = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
          const again = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
          expect(again.isError).toBe(false)
          expect(again.details.runId).toBe(reply.details.runId)
          expect(again.details.repeated).toBe(true)
          const runsBefore = (yield* allRuns).length
          const other = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-2" })
          expect(other.isError).toBe(true)
          expect(other.isError).toBe(true)
          expect(`${String(other.details.error)} ${other.text}`).toMatch(/LaunchAlreadyReserved|already/)
          const monitorStart = yield* runTool(
            { _tag: "start", workflow: "monitor" },
            { toolCallId: "call-3" }
          )
          expect(monitorStart.isError).toBe(true)
          expect(monitorStart.details.error).toBe("LaunchAlreadyReserved")
          expect(monitorStart.text).toContain("only one workflow launch is allowed per terminal turn")
          expect((yield* allRuns).length).toBe(runsBefore)
        })
      )
  )

  it.live("Monitor is the turn's one launch and consumes no restart", () =>
    withApp(
      Effect.gen(function* () {
        const first = yield* failOnce("crash")
        const started = yield* runTool({ _tag: "start", workflow: "monitor" }, { toolCallId: "call-m" })
        expect(started.isError).toBe(false)
        expect(started.details.launch).toBe("monitor")
        const launch = Option.getOrThrow(yield* (yield* LaunchStore).get(runIdOf(started.details)))
        expect(launch).toMatchObject({ kind: "monitor", terminalRunId: first })
        expect(launch.launch.lineage).toBeNull()
        // The turn's one launch is used: a restart in the same turn is refused.
        const sameTurn = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-r" })
        expect(sameTurn.details.error).toBe("LaunchAlreadyReserved")
        // Later, outside that terminal turn, the failed run is still restart 1 of its chain.
        yield* runTool({ _tag: "cancel", runId: runIdOf(started.details) })
        yield* (yield* PiSessionFake).appendBranch({
          customType: "pi-workflows-agent-step",
          content: "another step",
          details: { runId: runIdOf(started.details) }
        })
        const restart = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-r2" })
        expect(restart.isError).toBe(false)
        const lineage = Option.getOrThrow(yield* (yield* LaunchStore).get(runIdOf(restart.details))).launch
          .lineage
        expect(lineage?.restartNumber).toBe(1)
      })
    )
  )

  it.live("a launch in the terminal turn without a tool call ID is a typed refusal that starts nothing", () =>
    withApp(
      Effect.gen(function* () {
        const first = yield* failOnce("crash")
        const runsBefore = (yield* allRuns).length
        for (const call of [
          runTool({ _tag: "start", workflow: "monitor" }),
          runTool({ _tag: "restart", runId: first })
        ]) {
          const refused = yield* call
          expect(refused.isError).toBe(true)
          expect(refused.details.error).toBe("InvalidInput")
          expect(refused.text).toContain("needs the tool call's ID; nothing was started")
        }
        expect((yield* allRuns).length).toBe(runsBefore)
        // The turn's one launch is still free.
        const started = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
        expect(started.isError).toBe(false)
      })
    )
  )

  it.live("the same failure twice: the second restart is refused", () =>
    withApp(
      Effect.gen(function* () {
        const first = yield* failOnce("crash")
        const second = yield* restartAndFail(first, "c1")
        expect(second.reply.isError).toBe(false)
        const runsBefore = (yield* allRuns).length
        const third = yield* restartAndFail(second.runId ?? "", "c2")
        expect(third.reply.isError).toBe(true)
        expect(third.reply.details.error).toBe("RestartRefused")
        expect(third.reply.text).toMatch(/ended exactly as earlier run/)
        expect((yield* allRuns).length).toBe(runsBefore)
      })
    )
  )

  it.live("changing failures: the chain stops at four runs", () =>
    withApp(
      Effect.gen(function* () {
        let current = yield* failOnce("progressing")
        const chain = [current]
        for (let i = 0; i < 4; i++) {
          const next = yield* restartAndFail(current, `c${i}`)
          if (next.runId === null) {
            expect(next.reply.text).toContain("already has 3 of 3 restarts")
            break
          }
          current = next.runId
          chain.push(current)
        }
        expect(chain).toHaveLength(4)
        expect((yield* allRuns).length).toBe(4)
      })
    )
  )

  it.live(
    "refuses unknown, active, user- and agent-cancelled, foreign and changed-source runs, writing nothing",
    () =>
      withApp(
        Effect.gen(function* () {
          const unknown = yield* runTool({ _tag: "restart", runId: "nope" }, { toolCallId: "x" })
          expect(unknown.details.error).toBe("RestartRefused")
          expect(unknown.text).toMatch(/no such run/)
          const queued = yield* runTool({ _tag: "start", workflow: "monitor" })
          const queuedId = runIdOf(queued.details)
          const active = yield* runTool({ _tag: "restart", runId: queuedId })
          expect(active.text).toMatch(/is queued, not ended/)
          const cancelled = yield* Effect.orDie((yield* Engine).cancel(queuedId, { by: "user" }))
          expect(cancelled.state).toBe("cancelled")
          const byUser = yield* runTool({ _tag: "restart", runId: queuedId })
          expect(byUser.text).toMatch(/the user cancelled this run/)
          expect(byUser.text).toContain('a fresh `start` of workflow "monitor" is still possible')
          const failed = yield* failOnce("crash")
          const fake = yield* PiSessionFake
          yield* fake.setSessionId("s2")
          const foreign = yield* runTool({ _tag: "restart", runId: failed })
          expect(foreign.text).toMatch(/belongs to another Pi session/)
          yield* fake.setSessionId("s1")
          const { WorkflowRegistry } = yield* Effect.promise(() => import("../../src/engine/registry.ts"))
          yield* Effect.orDie((yield* WorkflowRegistry).replaceAll([{ ...crash, revision: 2 }, monitor]))
          const changed = yield* runTool({ _tag: "restart", runId: failed })
          expect(changed.text).toMatch(/changed since this run \(revision 1 → 2\)/)
          yield* Effect.orDie((yield* WorkflowRegistry).replaceAll([monitor]))
          const gone = yield* runTool({ _tag: "restart", runId: failed })
          expect(gone.text).toMatch(/no longer loaded/)
          // Cancelled means stopped, whoever cancelled: the agent's own cancel is refused too.
          const agentStart = yield* runTool({ _tag: "start", workflow: "monitor" }, { toolCallId: "call-a" })
          if (agentStart.isError) throw new Error(agentStart.text)
          const agentRun = runIdOf(agentStart.details)
          expect((yield* runTool({ _tag: "cancel", runId: agentRun })).isError).toBe(false)
          const byAgent = yield* runTool({ _tag: "restart", runId: agentRun })
          expect(byAgent.details.error).toBe("RestartRefused")
          expect(byAgent.text).toMatch(/the agent cancelled this run; cancelled means stopped/)
          expect(byAgent.text).toContain('a fresh `start` of workflow "monitor" is still possible')
          for (const reply of [unknown, active, byUser, byAgent, foreign, changed, gone])
            expect(reply.isError).toBe(true)
          expect((yield* allRuns).length).toBe(3)
          expect(Option.isNone(yield* (yield* LaunchStore).childOf(failed))).toBe(true)
        })
      )
  )
})

describe("launch reservation across a reload", () => {
  it.live(
    "survives closing the app: the repeated tool call returns the reserved run, which activates once",
    () =>
      Effect.gen(function* () {
        const filename = yield* freshLocation
        const { first, second } = yield* Effect.gen(function* () {
          const first = yield* failOnce("crash")
          const reply = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
          return { first, second: runIdOf(reply.details) }
        }).pipe(Effect.provide(app(filename)), Effect.scoped)
        yield* Effect.gen(function* () {
          const fake = yield* PiSessionFake
          // The reloaded session shows the same terminal message on its branch.
          yield* fake.appendBranch({
            customType: FALLBACK,
            content: "terminal turn",
            details: { runId: first }
          })
          const again = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-1" })
          expect(again.details.runId).toBe(second)
          expect(again.details.repeated).toBe(true)
          const other = yield* runTool({ _tag: "start", workflow: "monitor" }, { toolCallId: "call-2" })
          expect(other.details.error).toBe("LaunchAlreadyReserved")
          yield* afterSettle(false)
          yield* afterSettle(false)
          yield* eventually(stateOf(second), (state) => state === "failed")
          expect((yield* allRuns).length).toBe(2)
        }).pipe(Effect.provide(app(filename)), Effect.scoped)
      }).pipe(Effect.scoped)
  )
})

describe("the terminal turn after recovery, with hidden and passive messages newest in the branch", () => {
  it.live(
    "repeating the same start or restart tool call returns the reserved run, not ReservationConflict",
    () =>
      Effect.gen(function* () {
        const filename = yield* freshLocation
        const { first, monitorRun } = yield* Effect.gen(function* () {
          const first = yield* failOnce("crash")
          const reply = yield* runTool({ _tag: "start", workflow: "monitor" }, { toolCallId: "call-m" })
          expect(reply.details.launch).toBe("monitor")
          return { first, monitorRun: runIdOf(reply.details) }
        }).pipe(Effect.provide(app(filename)), Effect.scoped)
        yield* Effect.gen(function* () {
          const fake = yield* PiSessionFake
          // The reloaded branch: the terminal message, then the hidden trigger that restarts its
          // turn and a passive notification, both newer than it.
          const terminal = yield* fake.appendBranch({
            customType: FALLBACK,
            content: "terminal turn",
            details: { runId: first }
          })
          yield* fake.appendBranch(triggerMessage(terminal))
          yield* fake.appendBranch({
            customType: NOTIFICATION_TYPE,
            content: "Workflow crash ended",
            details: { runId: first, kind: "final", state: "failed" }
          })
          const again = yield* runTool({ _tag: "start", workflow: "monitor" }, { toolCallId: "call-m" })
          expect(again.isError).toBe(false)
          expect(again.details.runId).toBe(monitorRun)
          expect(again.details.repeated).toBe(true)
          // Another launch in the same turn is the turn's second one.
          const other = yield* runTool({ _tag: "restart", runId: first }, { toolCallId: "call-r" })
          expect(other.details.error).toBe("LaunchAlreadyReserved")
          expect((yield* allRuns).length).toBe(2)
        }).pipe(Effect.provide(app(filename)), Effect.scoped)
      }).pipe(Effect.scoped)
  )
})
