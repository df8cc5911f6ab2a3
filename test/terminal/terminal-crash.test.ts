/**
 * Crash safety of a terminal turn and its one launch: the real application graph over a real
 * SQLite file and one fake Pi session whose branch survives restarts (the engine simulation's
 * world). A workflow run fails; its fallback is its terminal turn; in that turn the model
 * restarts it. The process is killed (SIGKILL: from that instant its store calls and sends stop)
 * after the terminal intent's claim, after the fallback's send or resolution, after the launch
 * reservation, inside the reservation before its commit (the run row), or after the terminal
 * turn has settled; then a new process starts on the same file and session. After recovery the
 * failed run has exactly one terminal message and exactly one successor run.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Clock, Effect, Fiber, Logger, LogLevel, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { runTool } from "../../src/app/tool.ts"
import { makeSimClock } from "../sim/sim-clock.ts"
import { type CrashPlan, LEASE_MS, makeWorld, RUN_LEASE_MS } from "../sim-engine/world.ts"

const TERMINAL_TYPES = new Set(["pi-workflows-deferred-turn", "pi-workflows-presentation"])

const Rows = Schema.Struct({
  runs: Schema.Array(Schema.Struct({ run_id: Schema.String, state: Schema.String })),
  launches: Schema.Array(
    Schema.Struct({ run_id: Schema.String, parent_run_id: Schema.NullOr(Schema.String) })
  ),
  intents: Schema.Array(
    Schema.Struct({
      intent_id: Schema.String,
      run_id: Schema.String,
      resolution: Schema.NullOr(Schema.String)
    })
  )
})

const readDb = (filename: string) => {
  const db = new BetterSqlite(filename, { readonly: true, fileMustExist: true })
  try {
    return Schema.decodeUnknownSync(Rows)({
      runs: db.prepare("SELECT run_id, state FROM workflow_runs ORDER BY created_at, run_id").all(),
      launches: db.prepare("SELECT run_id, parent_run_id FROM workflow_run_launches").all(),
      intents: db.prepare("SELECT intent_id, run_id, resolution FROM workflow_turn_intents").all()
    })
  } finally {
    db.close()
  }
}

const field = (details: unknown, key: string): string | null => {
  if (typeof details !== "object" || details === null) return null
  const value: unknown = Reflect.get(details, key)
  return typeof value === "string" ? value : null
}

type Moment = "afterReservation" | "afterSettle" | "none"

/** The scenario, with the process killed per `plan` (delivery and store moments) or `moment`. */
const scenario = async (plan: CrashPlan, moment: Moment) => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-tcrash-"))
  const filename = join(dir, "controller.db")
  const clock = makeSimClock()
  const program = Effect.gen(function* () {
    const world = yield* makeWorld(filename, clock, null, plan)
    let proc = yield* world.startProc(0)
    let step = 0
    const run = (s: Parameters<typeof world.execute>[0]) =>
      Effect.zipRight(world.execute(s, step++), clock.quiesce)
    /** A dead process is replaced by a new one on the same file and session (Pi restarted). */
    const restartIfDead = Effect.gen(function* () {
      if (world.live().length > 0) return
      yield* world.kill(0)
      yield* run({ _tag: "Start", proc: 0 })
      const started = world.live()[0]
      if (started === undefined) throw new Error("no process after the restart")
      proc = started
    })
    /** Let leases run out and turns settle until nothing more happens (as the simulation drains). */
    const drain = Effect.gen(function* () {
      for (let round = 0, quiet = 0; round < 40 && quiet < 3; round++) {
        yield* restartIfDead
        const before = (yield* world.fake.sent).length
        if ((yield* world.fake.phase) !== "idle") yield* world.settle(false)
        yield* clock.advance(Math.max(LEASE_MS, RUN_LEASE_MS) + 1_000)
        yield* clock.quiesce
        quiet =
          (yield* world.fake.sent).length === before && (yield* world.fake.phase) === "idle" ? quiet + 1 : 0
      }
    })
    // The model starts a workflow in its turn; the turn ends and the run activates and fails.
    yield* run({ _tag: "ToolStart", proc: 0, workflow: "crashy" })
    yield* run({ _tag: "Settle" })
    yield* drain
    const branch = yield* world.fake.branch
    const terminal = branch.findLast((m) => TERMINAL_TYPES.has(m.customType))
    const failed = field(terminal?.details, "runId")
    if (failed === null) throw new Error("the failed run's terminal turn never arrived")
    // Its terminal turn: the fallback started a turn, in which the model restarts the run.
    if ((yield* world.fake.phase) === "idle") yield* world.fake.startTurn
    const restart = (target: typeof proc) =>
      Effect.flatMap(
        world.within(
          target,
          world.provide(target, runTool({ _tag: "restart", runId: failed }, { toolCallId: "call-1" }))
        ),
        Fiber.await
      )
    yield* restart(proc)
    if (moment === "afterReservation") yield* world.kill(0)
    yield* restartIfDead
    // Pi repeats the tool call after a crash or reload, in a turn: it must not launch twice.
    if ((yield* world.fake.phase) === "idle") yield* world.fake.startTurn
    yield* restart(proc)
    yield* run({ _tag: "Settle" })
    if (moment === "afterSettle") yield* world.kill(0)
    yield* drain
    return { branch: yield* world.fake.branch, failed, crashed: world.crashed() || moment !== "none" }
  })
  try {
    const { branch, failed, crashed } = await Effect.runPromise(
      program.pipe(
        Effect.withClock(clock),
        Effect.scoped,
        Logger.withMinimumLogLevel(LogLevel.None),
        Effect.withClock(Clock.make())
      )
    )
    return { branch, failed, crashed, db: readDb(filename) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const terminalMessagesOf = (branch: ReadonlyArray<{ customType: string; details: unknown }>, runId: string) =>
  branch.filter((m) => TERMINAL_TYPES.has(m.customType) && field(m.details, "runId") === runId)

describe("terminal turn crash safety (fake session, real SQLite file, killed process)", () => {
  const cases: ReadonlyArray<readonly [string, CrashPlan, Moment]> = [
    ["no crash", {}, "none"],
    ["after the terminal intent's claim", { point: "afterClaim" }, "none"],
    ["after the terminal message's send", { point: "afterSend" }, "none"],
    ["after the terminal intent's resolution", { point: "afterResolve" }, "none"],
    ["inside the reservation, before its commit (run row)", { beforeStore: "reserve", skip: 1 }, "none"],
    ["after the launch reservation", {}, "afterReservation"],
    ["after the terminal response settled", {}, "afterSettle"]
  ]
  for (const [name, plan, moment] of cases) {
    it(`${name}: one terminal message for the failed run, one successor run`, async () => {
      const { branch, failed, crashed, db } = await scenario(plan, moment)
      expect(crashed).toBe(name !== "no crash")
      expect(terminalMessagesOf(branch, failed)).toHaveLength(1)
      const successors = db.launches.filter((l) => l.parent_run_id === failed)
      expect(successors).toHaveLength(1)
      expect(db.runs.map((r) => r.run_id).sort()).toEqual([failed, successors[0]?.run_id].sort())
      // The successor ran (it fails the same way) and got its own one terminal message.
      const successor = successors[0]?.run_id ?? ""
      expect(db.runs.find((r) => r.run_id === successor)?.state).toBe("failed")
      expect(terminalMessagesOf(branch, successor)).toHaveLength(1)
      // Every resolved intent is backed by exactly one message in the branch.
      for (const intent of db.intents) {
        if (intent.resolution === null) continue
        expect(branch.filter((m) => field(m.details, "turnIntentId") === intent.intent_id)).toHaveLength(1)
      }
    }, 30_000)
  }
})

/** A completed run whose process dies around its terminal turn: one presentation or fallback. */
const completedScenario = async (plan: CrashPlan) => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-tcrash-"))
  const filename = join(dir, "controller.db")
  const clock = makeSimClock()
  const program = Effect.gen(function* () {
    const world = yield* makeWorld(filename, clock, null, plan)
    yield* world.startProc(0)
    let step = 0
    const run = (s: Parameters<typeof world.execute>[0]) =>
      Effect.zipRight(world.execute(s, step++), clock.quiesce)
    yield* run({ _tag: "ToolStart", proc: 0, workflow: "greet" })
    yield* run({ _tag: "Settle" })
    yield* run({ _tag: "ModelSubmit", proc: 0 })
    yield* run({ _tag: "Settle" })
    for (let round = 0, quiet = 0; round < 40 && quiet < 3; round++) {
      if (world.live().length === 0) {
        yield* world.kill(0)
        yield* run({ _tag: "Start", proc: 0 })
      }
      const before = (yield* world.fake.sent).length
      if ((yield* world.fake.phase) !== "idle") yield* world.settle(false)
      yield* clock.advance(Math.max(LEASE_MS, RUN_LEASE_MS) + 1_000)
      yield* clock.quiesce
      quiet =
        (yield* world.fake.sent).length === before && (yield* world.fake.phase) === "idle" ? quiet + 1 : 0
    }
    return { branch: yield* world.fake.branch, crashed: world.crashed() }
  })
  try {
    const result = await Effect.runPromise(
      program.pipe(
        Effect.withClock(clock),
        Effect.scoped,
        Logger.withMinimumLogLevel(LogLevel.None),
        Effect.withClock(Clock.make())
      )
    )
    return { ...result, db: readDb(filename) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("a completed run's terminal turn across a crash (fake session, real SQLite file)", () => {
  const cases: ReadonlyArray<readonly [string, CrashPlan]> = [
    ["after the run's end, before its intent is stored", { beforeStore: "ensure" }],
    ["after the presentation claimed the intent", { point: "afterClaim" }],
    ["after the presentation was sent", { point: "afterSend" }],
    ["after the intent was resolved", { point: "afterResolve" }]
  ]
  for (const [name, plan] of cases) {
    it(`${name}: exactly one terminal message`, async () => {
      const { branch, crashed, db } = await completedScenario(plan)
      expect(crashed).toBe(true)
      const [completed] = db.runs
      expect([db.runs.length, completed?.state]).toEqual([1, "completed"])
      expect(terminalMessagesOf(branch, completed?.run_id ?? "")).toHaveLength(1)
      expect(db.intents.map((i) => i.resolution !== null)).toEqual([true])
    }, 30_000)
  }
})
