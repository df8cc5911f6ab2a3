/**
 * The fault matrix at the engine level: every path that stops an active workflow turn (agent
 * cancel, step timeout, controller interrupt, claim loss) and every action (`submit`, `cancel`,
 * `pause`, `resume`, start, and recovery at session start) under each fault of the kit — busy,
 * read-only, thrown, hung (scripted on both stores) and the write lock held by a real second
 * process — over the whole application graph on a real SQLite file.
 *
 * Each cell asserts: the turn is aborted (interruption paths; the bound itself is measured with
 * TestClock in core-under-faults and in `npm run bench`), every reply is a readable text and no
 * fiber dies with a defect; and once the fault heals, the run reaches its end with exactly one
 * successor per interruption, each carried by exactly one branch message, nothing left pending.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger, LogLevel } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import type { Reply } from "../../src/app/replies.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { type Fault, RunStoreFaults, StoreFaults } from "../../src/testing/store-faults.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { layerAppUnderFaults } from "./app-under-faults.ts"
import { until } from "../support/poll.ts"
import { crashing } from "../support/workflows.ts"
import { faultLocation, REAL_FAULTS } from "./backend-faults.ts"
import { NoSyncPass } from "../support/timing.ts"
import { waitingQuestion } from "../support/fixtures.ts"

const STEP = "pi-workflows-agent-step"

/** While set, the prompt of `ask` throws (a new owner's rerun fails before prompting). */
let failPrompts = false

const agentFlow = (name: string, timeoutMs: number) => ({
  name,
  startAt: "ask",
  nodes: {
    ask: {
      type: "agent",
      timeoutMs,
      prompt: () => {
        if (failPrompts) throw new Error("the prompt could not be built")
        return "answer"
      }
    }
  },
  edges: []
})
const crash = crashing("boom")
/** Two agent steps: a pause requested during the first takes effect before the second. */
const twoSteps = {
  ...agentFlow("two", 600_000),
  nodes: { ask: agentFlow("two", 600_000).nodes.ask, again: { type: "agent", prompt: "again" } },
  edges: [{ from: "ask", to: "again" }]
}
/** A waiting checkpoint, then a compute node: the answer resumes the run to its end. */
const question = {
  name: "question",
  startAt: "ask",
  nodes: { ask: { type: "wait", prompt: "Which colour?" }, use: { type: "compute", run: () => "used" } },
  edges: [{ from: "ask", to: "use" }]
}
const WORKFLOWS = [agentFlow("patient", 600_000), agentFlow("slow", 600), twoSteps, crash, question]

const buildApp = (filename: string, engine: { readonly leaseMs: number; readonly renewEveryMs: number }) =>
  Layer.build(
    layerAppUnderFaults({
      location: filename,
      busyTimeoutMs: 100,
      workflows: WORKFLOWS,
      engine
    }).pipe(Layer.provide(NoSyncPass), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  )
type App = Effect.Effect.Success<ReturnType<typeof buildApp>>

const NORMAL = { leaseMs: 60_000, renewEveryMs: 20_000 }

interface FaultCase {
  readonly name: string
  /** Turn the fault on for `app`; closing the returned scope is not needed (heal does it). */
  readonly inject: (app: App, filename: string) => Effect.Effect<Effect.Effect<void>, unknown>
}

const scripted = (name: string, fault: Fault): FaultCase => ({
  name,
  inject: (app) =>
    Effect.gen(function* () {
      const intents = Context.get(app, StoreFaults)
      const runs = Context.get(app, RunStoreFaults)
      yield* intents.inject("*", fault)
      yield* runs.inject("*", fault)
      return Effect.zipRight(intents.clear(), runs.clear())
    })
})

const FAULTS: ReadonlyArray<FaultCase> = [
  scripted("busy", { _tag: "Busy" }),
  scripted("read-only", { _tag: "ReadOnly" }),
  scripted("thrown", { _tag: "Throw" }),
  // Hung past every abort bound (200–250 ms), then the call answers.
  scripted("hung", { _tag: "Hang", ms: 1_500 }),
  // The database's own faults on this run's backend (backend-faults.ts).
  ...REAL_FAULTS.map((real) => ({
    name: real.name,
    inject: (_app: App, location: string) => real.inject(location)
  }))
]

const ctx = <I, S>(app: App, tag: Context.Tag<I, S>) => Context.get(app as Context.Context<I>, tag)

/** Start a run of `workflow` and wait for its step prompt; returns the run ID. */
const startAtStep = (app: App, workflow: string) =>
  Effect.gen(function* () {
    const engine = ctx(app, Engine)
    const fake = ctx(app, PiSessionFake)
    const run = yield* Effect.orDie(engine.start({ workflow, input: {}, sessionId: "s1", origin: "tool" }))
    yield* Effect.orDie(engine.activate("s1"))
    yield* until(fake.branch, (b) => b.some((m) => m.customType === STEP), "the step prompt")
    return run.runId
  })

const tool = (app: App, input: Parameters<typeof runTool>[0]) => runTool(input).pipe(Effect.provide(app))
const command = (app: App, input: Parameters<typeof runCommand>[0]) =>
  runCommand(input).pipe(Effect.provide(app))

const expectReadable = (reply: Reply) => {
  expect(typeof reply.text).toBe("string")
  expect(reply.text.length).toBeGreaterThan(0)
  if (reply.isError) expect(reply.text).toMatch(/^workflow \w+ failed: /)
}

const requestIdOf = (app: App) =>
  Effect.map(ctx(app, PiSessionFake).branch, (branch) => {
    const details = branch.filter((m) => m.customType === STEP).at(-1)?.details
    return typeof details === "object" && details !== null && "requestId" in details
      ? String(details.requestId)
      : ""
  })

/** Pi's agent_settled, both hook halves; then session start (reconciliation and fallback sync). */
const settleAndStart = (app: App, aborted: boolean) =>
  Effect.gen(function* () {
    const fake = ctx(app, PiSessionFake)
    if ((yield* fake.phase) !== "idle") yield* fake.settle({ aborted })
    const { userHold } = yield* classifySettle(aborted)
    yield* afterSettle(userHold)
    yield* onSessionStart
  }).pipe(Effect.provide(app))

/**
 * After healing: the run reaches `state`, every intent of it is resolved, each by exactly one
 * branch message; `successors` intents in all.
 */
const judge = (app: App, runId: string, state: string, successors: number, others: ReadonlyArray<App> = []) =>
  Effect.gen(function* () {
    const runs = ctx(app, RunStore)
    const intents = ctx(app, TurnIntentStore)
    const fake = ctx(app, PiSessionFake)
    yield* until(
      Effect.zipRight(
        settleAndStart(app, false),
        Effect.map(runs.get(runId), (r) => (r._tag === "Some" ? r.value.state : null))
      ),
      (s) => s === state,
      `run ${state}`
    )
    const rows = yield* until(
      Effect.zipRight(
        Effect.forEach([app, ...others], (each) => settleAndStart(each, false)),
        intents.list({ runId, limit: 20 })
      ),
      (list) => list.every((i) => i.resolvedAt !== null),
      "every intent resolved"
    )
    // One intent per interruption: the causes say which ones there are when there are more.
    expect(rows.map((r) => r.cause)).toHaveLength(successors)
    const branch = [...(yield* fake.branch)]
    for (const other of others) branch.push(...(yield* ctx(other, PiSessionFake).branch))
    for (const row of rows) {
      const carrying = branch.filter(
        (m) =>
          typeof m.details === "object" &&
          m.details !== null &&
          "turnIntentId" in m.details &&
          m.details.turnIntentId === row.intentId
      )
      expect(carrying).toHaveLength(1)
    }
  })

type Path = "agent cancel" | "step timeout" | "controller interrupt" | "claim loss"
const PATHS: ReadonlyArray<readonly [Path, string]> = [
  ["agent cancel", "cancelled"],
  ["step timeout", "timed_out"],
  ["controller interrupt", "failed"],
  ["claim loss", "failed"]
]

const interruption = (path: Path, endState: string, fault: FaultCase) =>
  Effect.gen(function* () {
    failPrompts = false
    const filename = yield* faultLocation
    const a = yield* buildApp(
      filename,
      path === "claim loss" ? { leaseMs: 150, renewEveryMs: 1_500 } : NORMAL
    )
    const runId = yield* startAtStep(a, path === "step timeout" ? "slow" : "patient")
    // Claim loss: B takes over and fails first; the fault then covers A's discovery of the loss.
    const b = path === "claim loss" ? yield* buildApp(filename, NORMAL) : null
    const heal = b === null ? yield* fault.inject(a, filename) : Effect.void
    const others: Array<App> = []
    // The stop's caller waits for the run's end, which the runner retries until the store heals.
    let answered: Effect.Effect<void> = Effect.void
    switch (path) {
      case "agent cancel": {
        const reply = yield* Effect.fork(tool(a, { _tag: "cancel", runId }))
        answered = Effect.map(Fiber.join(reply), expectReadable)
        break
      }
      case "step timeout":
        break
      case "controller interrupt": {
        // Its answer is typed (Either), never a defect.
        const reply = yield* Effect.fork(
          Effect.either(ctx(a, Engine).interrupt(runId, { reason: "test", afterwards: "fail" }))
        )
        answered = Effect.asVoid(Fiber.join(reply))
        break
      }
      case "claim loss": {
        if (b === null) break
        others.push(b)
        yield* Effect.sleep("300 millis") // past A's lease
        failPrompts = true // B's rerun fails before prompting
        // B's store has no fault, but a lock held by another process stops it too: retry.
        yield* until(Effect.either(ctx(b, Engine).resume(runId)), (r) => r._tag === "Right", "B's takeover")
        yield* until(
          Effect.map(ctx(b, RunStore).get(runId), (r) => (r._tag === "Some" ? r.value.state : null)),
          (s) => s === "failed",
          "B's run failed"
        )
        // A cannot learn of the loss while its own store fails: it does at its first renewal after.
        const healLater = yield* fault.inject(a, filename)
        yield* Effect.sleep("1500 millis") // A's renewal fails under the fault
        yield* healLater
        break
      }
    }
    // The turn is aborted (while the fault lasts, but for claim loss): never skipped.
    yield* until(ctx(a, PiSessionFake).aborts, (n) => n === 1, "the abort")
    yield* heal
    yield* answered
    yield* settleAndStart(a, true)
    yield* judge(a, runId, endState, 1, others)
    failPrompts = false
  }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))

type Action = "submit" | "cancel" | "pause" | "resume" | "start" | "recovery" | "answer"
const ACTIONS: ReadonlyArray<Action> = ["submit", "cancel", "pause", "resume", "start", "recovery", "answer"]

const action = (name: Action, fault: FaultCase) =>
  Effect.gen(function* () {
    failPrompts = false
    const filename = yield* faultLocation
    const a = yield* buildApp(filename, NORMAL)
    const fake = ctx(a, PiSessionFake)
    /** Run `act` under the fault; after healing, repeat it only if it failed. */
    const underFault = (act: Effect.Effect<Reply>) =>
      Effect.gen(function* () {
        const heal = yield* fault.inject(a, filename)
        // A stop that reached the runner answers once the run's end is stored: the runner
        // retries it until the fault heals (at most a lease), so heal after a while.
        const replying = yield* Effect.fork(act)
        yield* Effect.ignore(Effect.timeout(Fiber.await(replying), "1 second"))
        yield* heal
        const reply = yield* Fiber.join(replying)
        expectReadable(reply)
        if (reply.isError) expect((yield* act).isError).toBe(false)
      })
    const submitted = Effect.gen(function* () {
      const requestId = yield* requestIdOf(a)
      return yield* tool(a, { _tag: "submit", requestId, output: { done: true } })
    })
    /** The second step of `two`: its prompt arrives, the model answers it. */
    const secondStep = Effect.gen(function* () {
      yield* until(fake.branch, (b) => b.filter((m) => m.customType === STEP).length === 2, "the second step")
      expect((yield* submitted).isError).toBe(false)
      yield* fake.settle()
    })
    switch (name) {
      case "submit": {
        const runId = yield* startAtStep(a, "patient")
        yield* underFault(submitted)
        yield* fake.settle()
        return yield* judge(a, runId, "completed", 1)
      }
      case "cancel": {
        const runId = yield* startAtStep(a, "patient")
        yield* underFault(command(a, { _tag: "cancel", runId }))
        return yield* judge(a, runId, "cancelled", 0)
      }
      case "pause": {
        const runId = yield* startAtStep(a, "two")
        yield* underFault(command(a, { _tag: "pause", runId }))
        expect((yield* submitted).isError).toBe(false)
        yield* fake.settle()
        yield* until(
          Effect.map(ctx(a, RunStore).get(runId), (r) => (r._tag === "Some" ? r.value.state : null)),
          (s) => s === "waiting",
          "paused at the step boundary"
        )
        expect((yield* command(a, { _tag: "resume", runId })).isError).toBe(false)
        yield* secondStep
        return yield* judge(a, runId, "completed", 1)
      }
      case "resume": {
        const runId = yield* startAtStep(a, "two")
        expect((yield* command(a, { _tag: "pause", runId })).isError).toBe(false)
        expect((yield* submitted).isError).toBe(false)
        yield* fake.settle()
        yield* until(
          Effect.map(ctx(a, RunStore).get(runId), (r) => (r._tag === "Some" ? r.value.state : null)),
          (s) => s === "waiting",
          "paused"
        )
        yield* underFault(command(a, { _tag: "resume", runId }))
        yield* secondStep
        return yield* judge(a, runId, "completed", 1)
      }
      case "start": {
        yield* underFault(tool(a, { _tag: "start", workflow: "crash", input: {} }))
        const runs = yield* Effect.orDie(ctx(a, Engine).list("s1"))
        expect(runs).toHaveLength(1)
        yield* Effect.orDie(ctx(a, Engine).activate("s1"))
        // A tool-started run that fails owes its terminal turn: exactly one.
        return yield* judge(a, runs[0]?.runId ?? "", "failed", 1)
      }
      case "answer": {
        const started = yield* Effect.orDie(
          ctx(a, Engine).start({ workflow: "question", input: {}, sessionId: "s1", origin: "tool" })
        )
        yield* Effect.orDie(ctx(a, Engine).activate("s1"))
        const asked = yield* until(
          Effect.map(fake.branch, (b) => b.flatMap((m) => waitingQuestion(m.details) ?? [])),
          (questions) => questions.length > 0,
          "the waiting presentation"
        )
        const requestId = asked[0]?.requestId ?? ""
        yield* underFault(tool(a, { _tag: "answer", requestId, answer: "blue" }))
        yield* fake.settle()
        // The answer counted once: the run completed with it, and its end owes one presentation.
        yield* judge(a, started.runId, "completed", 1)
        const result = yield* Effect.orDie(ctx(a, RunStore).get(started.runId))
        return expect(result._tag === "Some" && result.value.state).toBe("completed")
      }
      case "recovery": {
        const started = yield* Effect.orDie(
          ctx(a, Engine).start({ workflow: "crash", input: {}, sessionId: "s1", origin: "tool" })
        )
        const heal = yield* fault.inject(a, filename)
        // The run may fail under the fault (its terminal intent not stored); session start too.
        yield* Effect.either(ctx(a, Engine).activate("s1"))
        yield* Effect.exit(settleAndStart(a, false))
        yield* heal
        return yield* judge(a, started.runId, "failed", 1)
      }
    }
  }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))

describe("engine-level fault matrix", () => {
  for (const fault of FAULTS) {
    describe(fault.name, () => {
      for (const [path, endState] of PATHS) {
        // Under read-only and thrown faults the run's end (cancel, timeout, interrupt) is
        // retried until the store heals: the decided end is kept, not left to a takeover.
        it.live(
          `${path}: the turn is aborted, then one successor`,
          () => interruption(path, endState, fault),
          30_000
        )
      }
      for (const name of ACTIONS) {
        it.live(`${name}: a readable reply, then nothing lost`, () => action(name, fault), 30_000)
      }
    })
  }
})
