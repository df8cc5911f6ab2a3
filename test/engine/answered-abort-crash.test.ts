/**
 * An abort answered by a workflow prompt whose runner dies before the clear lands on the row.
 *
 * A step times out (abort A, its intent I pending), the route sends the recovery prompt, which
 * answers I (I resolved `workflowPrompt`); the process is killed (SIGKILL) right before
 * `clearInterruption`, or right after the prompt's send. The run row still names A as
 * outstanding. A new process takes the run over and the run then ends — the recovery step's
 * durable deadline passes, the agent cancels, the user cancels, or the model submits. Judged by
 * what the model saw: the run's end gets exactly one terminal message (none for the user's direct
 * cancel), and no intent has two messages. The old behaviour: the end reused I, which was
 * resolved already, so the model never heard that the run ended.
 *
 * The engine simulation's world: the real application graph over a real SQLite file, one fake
 * Pi session whose branch survives restarts.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Clock, Effect, Logger, LogLevel, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { runTool } from "../../src/app/tool.ts"
import { makeSimClock } from "../sim/sim-clock.ts"
import { type CrashPlan, LEASE_MS, makeWorld, RUN_LEASE_MS } from "../sim-engine/world.ts"

const STEP = "pi-workflows-agent-step"
const TERMINAL_TYPES = new Set(["pi-workflows-deferred-turn", "pi-workflows-presentation"])

const WORKFLOWS = [
  {
    name: "answered",
    startAt: "review",
    nodes: {
      review: { type: "agent", prompt: "Review.", timeoutMs: 5_000 },
      recover: { type: "agent", prompt: "Review timed out; decide now.", timeoutMs: 10_000 }
    },
    edges: [{ from: "review", switch: { on: "$result.outcome", cases: { timed_out: "recover" } } }]
  },
  {
    // The same without a limit on the recovery step: the new owner prompts it again.
    name: "answeredOpen",
    startAt: "review",
    nodes: {
      review: { type: "agent", prompt: "Review.", timeoutMs: 5_000 },
      recover: { type: "agent", prompt: "Review timed out; decide now.", timeoutMs: null }
    },
    edges: [{ from: "review", switch: { on: "$result.outcome", cases: { timed_out: "recover" } } }]
  }
]

const Rows = Schema.Struct({
  runs: Schema.Array(
    Schema.Struct({ run_id: Schema.String, state: Schema.String, abort_pending: Schema.Number })
  ),
  intents: Schema.Array(
    Schema.Struct({
      intent_id: Schema.String,
      cause: Schema.String,
      eligible_at: Schema.NullOr(Schema.String),
      resolution: Schema.NullOr(Schema.String)
    })
  )
})

const readDb = (filename: string) => {
  const db = new BetterSqlite(filename, { readonly: true, fileMustExist: true })
  try {
    return Schema.decodeUnknownSync(Rows)({
      runs: db.prepare("SELECT run_id, state, abort_pending FROM workflow_runs").all(),
      intents: db
        .prepare(
          "SELECT intent_id, cause, eligible_at, resolution FROM workflow_turn_intents ORDER BY requested_at"
        )
        .all()
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

type End = "deadline" | "agentCancel" | "userCancel" | "submit"

const scenario = async (plan: CrashPlan, end: End) => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-answered-"))
  const filename = join(dir, "controller.db")
  const clock = makeSimClock()
  const program = Effect.gen(function* () {
    const world = yield* makeWorld(filename, clock, null, plan, WORKFLOWS)
    const first = yield* world.startProc(0)
    let step = 0
    const run = (s: Parameters<typeof world.execute>[0]) =>
      Effect.zipRight(world.execute(s, step++), clock.quiesce)
    const restartIfDead = Effect.gen(function* () {
      if (world.live().length > 0) return
      yield* world.kill(0)
      yield* run({ _tag: "Start", proc: 0 })
    })
    const steps = Effect.map(world.fake.branch, (b) => b.filter((m) => m.customType === STEP))
    // The model starts the workflow; the review prompt goes out and its step times out.
    const workflow = end === "submit" ? "answeredOpen" : "answered"
    yield* world.fake.startTurn
    yield* world.within(first, world.provide(first, runTool({ _tag: "start", workflow })))
    yield* clock.quiesce
    yield* run({ _tag: "Settle" })
    if ((yield* steps).length !== 1) throw new Error("the review prompt never arrived")
    yield* run({ _tag: "Advance", ms: 6_000 })
    // The aborted turn settles: the recovery prompt answers the timeout; the process dies.
    yield* run({ _tag: "Settle" })
    if (!world.crashed()) throw new Error("the crash plan never fired")
    yield* restartIfDead
    const runId = field((yield* steps)[0]?.details, "runId") ?? ""
    switch (end) {
      case "agentCancel":
        // The model, in a turn of its own, cancels the run it was given.
        if ((yield* world.fake.phase) === "idle") yield* world.fake.startTurn
        yield* run({ _tag: "ModelCancel", proc: 0 })
        yield* run({ _tag: "Settle" })
        break
      case "userCancel":
        yield* run({ _tag: "UserCancel", proc: 0 })
        break
      case "submit":
        // Once the run is taken over, the model submits the newest recovery prompt.
        for (let i = 0; i < 6 && (yield* steps).length < 3; i++) {
          if ((yield* world.fake.phase) !== "idle") yield* world.settle(false)
          yield* run({ _tag: "Advance", ms: 6_000 })
        }
        if ((yield* world.fake.phase) === "idle") yield* world.fake.startTurn
        yield* run({ _tag: "ModelSubmit", proc: 0 })
        yield* run({ _tag: "Settle" })
        break
      case "deadline":
        break
    }
    // Let leases run out and turns settle until nothing more happens: the new owner takes the
    // run over (for "deadline", the recovery step's durable deadline has passed by then).
    for (let round = 0, quiet = 0; round < 40 && quiet < 3; round++) {
      yield* restartIfDead
      const before = (yield* world.fake.sent).length
      if ((yield* world.fake.phase) !== "idle") yield* world.settle(false)
      yield* clock.advance(Math.max(LEASE_MS, RUN_LEASE_MS) + 1_000)
      yield* clock.quiesce
      quiet =
        (yield* world.fake.sent).length === before && (yield* world.fake.phase) === "idle" ? quiet + 1 : 0
    }
    return { branch: yield* world.fake.branch, runId }
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

const expected: Record<End, { readonly state: string; readonly terminal: number }> = {
  deadline: { state: "timed_out", terminal: 1 },
  agentCancel: { state: "cancelled", terminal: 1 },
  // A direct cancel owes the model nothing, and the timeout was answered by the prompt.
  userCancel: { state: "cancelled", terminal: 0 },
  submit: { state: "completed", terminal: 1 }
}

describe("an answered abort left on the run row by a killed runner (fake session, real SQLite file)", () => {
  const crashes: ReadonlyArray<readonly [string, CrashPlan]> = [
    ["before the clear of the answered abort", { beforeStore: "clearInterruption" }],
    ["after the answering prompt's send", { point: "afterSend" }]
  ]
  const ends: ReadonlyArray<End> = ["deadline", "agentCancel", "userCancel", "submit"]
  for (const [moment, plan] of crashes) {
    for (const end of ends) {
      it(`killed ${moment}, then the run ends by ${end}: its end gets exactly ${expected[end].terminal} terminal message(s)`, async () => {
        const { branch, runId, db } = await scenario(plan, end)
        expect(db.runs.map((r) => [r.run_id, r.state])).toEqual([[runId, expected[end].state]])
        // The timeout's intent was answered by the recovery prompt, not by a fallback. After the
        // user's cancel it may also be retired before anything recorded that answer: pending,
        // never eligible, so no fallback either way.
        const timeout = db.intents[0]
        expect(timeout?.cause).toBe("timedOut")
        if (end !== "userCancel" || timeout?.resolution !== null)
          expect(timeout?.resolution).toBe("workflowPrompt")
        else expect(timeout?.eligible_at).toBeNull()
        const terminal = branch.filter(
          (m) => TERMINAL_TYPES.has(m.customType) && field(m.details, "runId") === runId
        )
        expect(terminal).toHaveLength(expected[end].terminal)
        // Every intent has at most one message in the branch, and every resolved one exactly one.
        for (const intent of db.intents) {
          const messages = branch.filter((m) => field(m.details, "turnIntentId") === intent.intent_id)
          // A retired intent (below) may have its answering prompt in the branch, unrecorded.
          if (intent.resolution !== null || end !== "userCancel")
            expect(messages).toHaveLength(intent.resolution === null ? 0 : 1)
          else expect(messages.length).toBeLessThanOrEqual(1)
        }
        // Every intent is resolved, or retired by the user's cancel (pending, never eligible).
        const retired = (i: (typeof db.intents)[number]) =>
          end === "userCancel" && i.resolution === null && i.eligible_at === null
        expect(db.intents.every((i) => i.resolution !== null || retired(i))).toBe(true)
      }, 30_000)
    }
  }
})
