/**
 * Run one engine schedule and judge it. After the schedule the world is brought to "live and
 * idle" (faults healed, hold released, a process alive, leases run out, turns settled), then
 * the invariants are checked against the database and the session branch, i.e. what the model
 * saw:
 *
 * 1. one intent → at most one message in the branch;
 * 2. one run → never two pending intents (one interruption, one intent);
 * 3. nothing pending and ineligible after its run is terminal, but intents the user's direct
 *    cancel retired;
 * 4. every eligible intent of the live session resolved, backed by exactly one branch message of
 *    the kind its resolution names;
 * 5. every ended run has exactly one terminal successor in the branch (its presentation or one
 *    fallback), but a direct user cancel; no run has two;
 * 6. no run left claimed past its lease (no run owned by a dead process);
 * 7. no fallback was sent during shutdown or user hold;
 * 8–9. no step reminder then either, at most 2 per attempt;
 * 10. with waiting checkpoints (`waits`): each question at most once in the branch.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Clock, Effect, Exit, Logger, LogLevel, Schema } from "effect"
import { makeSimClock, SIM_EPOCH } from "../sim/sim-clock.ts"
import { describeStep, generate, type Schedule } from "./schedule.ts"
import { LEASE_MS, makeWorld, type Mutation, RUN_LEASE_MS, SESSION } from "./world.ts"

const IntentRow = Schema.Struct({
  intent_id: Schema.String,
  run_id: Schema.String,
  target_session_id: Schema.String,
  cause: Schema.String,
  eligible_at: Schema.NullOr(Schema.String),
  resolved_at: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Schema.String),
  resolution_message_id: Schema.NullOr(Schema.String)
})
const RunRow = Schema.Struct({
  run_id: Schema.String,
  state: Schema.String,
  cancel_requested: Schema.NullOr(Schema.String),
  abort_cause: Schema.NullOr(Schema.String),
  origin: Schema.String,
  claim_token: Schema.NullOr(Schema.String),
  claim_expires_at: Schema.NullOr(Schema.Number)
})

const TERMINAL = new Set(["completed", "failed", "timed_out", "cancelled"])
const KIND_OF_RESOLUTION: Record<string, string> = {
  fallback: "pi-workflows-deferred-turn",
  workflowPrompt: "pi-workflows-agent-step",
  presentation: "pi-workflows-presentation"
}
const SUCCESSOR_TYPES = new Set(["pi-workflows-deferred-turn", "pi-workflows-presentation"])

export interface EngineSimResult {
  readonly seed: number
  readonly violations: ReadonlyArray<string>
  readonly trace: ReadonlyArray<string>
  readonly stats: Readonly<Record<string, number>>
}

const field = (details: unknown, key: string): string | null => {
  if (typeof details !== "object" || details === null || !(key in details)) return null
  const value: unknown = Reflect.get(details, key)
  return typeof value === "string" ? value : null
}

const readDb = (filename: string) => {
  const db = new BetterSqlite(filename, { readonly: true, fileMustExist: true })
  try {
    return {
      intents: Schema.decodeUnknownSync(Schema.Array(IntentRow))(
        db.prepare("SELECT * FROM workflow_turn_intents ORDER BY requested_at, intent_id").all()
      ),
      answers: Number(
        db.prepare("SELECT count(*) FROM workflow_waits WHERE answered_by IS NOT NULL").pluck().get()
      ),
      runs: Schema.decodeUnknownSync(Schema.Array(RunRow))(
        db
          .prepare(
            "SELECT run_id, state, cancel_requested, abort_cause, origin, claim_token, claim_expires_at FROM workflow_runs"
          )
          .all()
      )
    }
  } finally {
    db.close()
  }
}

export interface EngineSimOptions {
  readonly mutation?: Mutation
  /** Schedules with waiting checkpoints (`generate`'s `waits`). */
  readonly waits?: boolean
  /** Wall-clock time after which a schedule that has not finished is reported as hung. */
  readonly hangAfterMs?: number
}

export const runEngineSchedule = async (
  schedule: Schedule,
  options: EngineSimOptions = {}
): Promise<EngineSimResult> => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-esim-"))
  const filename = join(dir, "controller.db")
  const clock = makeSimClock()
  const trace: Array<string> = []
  const program = Effect.gen(function* () {
    const world = yield* makeWorld(filename, clock, options.mutation ?? null)
    yield* world.startProc(0)
    if (schedule.twoProcs) yield* world.startProc(1)
    for (const [index, step] of schedule.steps.entries()) {
      yield* clock.quiesce
      yield* world.execute(step, index)
      yield* clock.quiesce
      trace.push(
        `${String(index).padStart(3)} ${describeStep(step)}  [${yield* world.fake.phase}, t+${clock.now() - SIM_EPOCH}]`
      )
    }
    // Live and idle: heal, release the hold, make sure a process lives, let leases run out and
    // every turn settle, until nothing more happens.
    world.setStep(schedule.steps.length)
    yield* world.healAll
    yield* world.releaseHold
    if (world.live().length === 0 || (yield* world.lifecycle).shuttingDown) {
      yield* world.execute({ _tag: "Start", proc: 0 }, schedule.steps.length)
    }
    let rounds = 0
    let quietRounds = 0
    for (; rounds < 60 && quietRounds < 3; rounds++) {
      const before = (yield* world.fake.sent).length
      if ((yield* world.fake.phase) !== "idle") {
        yield* world.settle((yield* world.fake.phase) === "aborting")
        // A turn the user escaped settles into a user hold; the user comes back and lifts it, as
        // before the drain (a hold that never lifts holds every fallback back: seed 10305).
        yield* world.releaseHold
      }
      yield* clock.advance(Math.max(LEASE_MS, RUN_LEASE_MS) + 1_000)
      yield* clock.quiesce
      const after = (yield* world.fake.sent).length
      quietRounds = after === before && (yield* world.fake.phase) === "idle" ? quietRounds + 1 : 0
    }
    trace.push(`--- drained in ${rounds} rounds`)
    const branch = yield* world.fake.branch
    const sends = [...world.sends]
    const now = clock.now()
    for (const proc of world.live()) yield* world.kill(proc.slot)
    return { branch, sends, now, rounds, userCancelled: world.userCancelled }
  })
  // A schedule that never finishes is a finding too (a hang on the simulated clock never ends).
  // Disconnected: a hung schedule is reported at once, its fibers are interrupted in the
  // background, and the worker goes on with the next seed.
  const exit = await Effect.runPromiseExit(
    program.pipe(
      Effect.withClock(clock),
      Effect.scoped,
      Logger.withMinimumLogLevel(process.env.SIM_LOG ? LogLevel.Debug : LogLevel.None),
      Effect.disconnect,
      Effect.timeoutFail({
        duration: options.hangAfterMs ?? 30_000,
        onTimeout: () => new Error(`the schedule hung after: ${trace.at(-1) ?? "the start"}`)
      }),
      Effect.withClock(Clock.make())
    )
  )
  try {
    if (Exit.isFailure(exit)) {
      return {
        seed: schedule.seed,
        violations: [`the simulation crashed: ${String(exit.cause).slice(0, 1_500)}`],
        trace,
        stats: {}
      }
    }
    const { branch, sends, now, rounds } = exit.value
    const { intents, runs, answers } = readDb(filename)
    const violations: Array<string> = []
    const short = (id: string) => id.slice(-10)
    for (const send of sends) {
      trace.push(
        `    sent at step ${send.step} by p${send.proc}: ${send.customType} run ${send.runId?.slice(-8) ?? "-"} intent ${send.turnIntentId?.slice(-10) ?? "-"} (${send.phase}${send.written ? "" : ", lost"})`
      )
    }
    for (const run of runs) {
      trace.push(
        `    run ${run.run_id.slice(-10)}: ${run.state} cancel=${run.cancel_requested} abort=${run.abort_cause}`
      )
    }
    for (const i of intents) {
      trace.push(
        `    intent ${short(i.intent_id)}: run ${i.run_id.slice(-10)} ${i.cause} eligible=${i.eligible_at !== null} → ${i.resolution} ${i.resolution_message_id?.slice(-8) ?? ""}`
      )
    }
    // 1. one intent → at most one message
    const perIntent = new Map<string, number>()
    for (const m of branch) {
      const id = field(m.details, "turnIntentId")
      if (id !== null) perIntent.set(id, (perIntent.get(id) ?? 0) + 1)
    }
    for (const [id, count] of perIntent)
      if (count > 1) violations.push(`intent ${short(id)}: ${count} messages in the branch`)
    // 2. never two pending intents for one run
    const pendingByRun = new Map<string, number>()
    for (const i of intents)
      if (i.resolved_at === null) pendingByRun.set(i.run_id, (pendingByRun.get(i.run_id) ?? 0) + 1)
    for (const [run, count] of pendingByRun)
      if (count > 1) violations.push(`run ${short(run)}: ${count} pending intents`)
    const stateOf = new Map(runs.map((r) => [r.run_id, r]))
    /**
     * A direct user cancel (the cancelled row keeps who cancelled it): quiet, and it retires every
     * pending intent of its run.
     */
    const quietEnd = (run: (typeof runs)[number]) =>
      run.state === "cancelled" && run.cancel_requested === "user"

    for (const i of intents) {
      const run = stateOf.get(i.run_id)
      // 3. nothing pending and ineligible after its run is terminal (but retired by the user's cancel)
      if (
        i.resolved_at === null &&
        i.eligible_at === null &&
        run !== undefined &&
        TERMINAL.has(run.state) &&
        !quietEnd(run)
      ) {
        violations.push(
          `intent ${short(i.intent_id)} (${i.cause}) pending and ineligible; run is ${run.state}`
        )
      }
      // 4. every eligible intent delivered, by exactly one message of its kind
      if (i.target_session_id === SESSION && i.eligible_at !== null && i.resolved_at === null) {
        violations.push(`intent ${short(i.intent_id)} (${i.cause}) eligible but never delivered`)
      }
      if (i.resolution !== null) {
        // A sibling's message answers a covered intent (src/delivery/sibling-intents.ts): the
        // intent stores that message's identity; the group sharing it needs one message.
        const group = new Set(
          intents
            .filter(
              (s) =>
                s.run_id === i.run_id &&
                s.resolution === i.resolution &&
                s.resolution_message_id === i.resolution_message_id
            )
            .map((s) => s.intent_id)
        )
        const backing = branch.filter((m) => group.has(field(m.details, "turnIntentId") ?? ""))
        if (backing.length !== 1 || backing[0]?.customType !== KIND_OF_RESOLUTION[i.resolution]) {
          violations.push(
            `intent ${short(i.intent_id)} resolved by ${i.resolution} but the branch holds ${backing.map((m) => m.customType).join(",") || "nothing"}`
          )
        }
      }
    }
    // 5. one terminal successor per ended run (none after a direct user cancel); a waiting
    // presentation asks a question and is not one
    for (const run of runs) {
      const successors = branch.filter(
        (m) =>
          SUCCESSOR_TYPES.has(m.customType) &&
          field(m.details, "runId") === run.run_id &&
          field(m.details, "state") !== "waiting"
      )
      // A direct user cancel is quiet; the agent's cancel, with or without a workflow turn to
      // stop, owes the run's terminal turn. Runs the user started with `/workflow start` get
      // their terminal turn too.
      const quiet = quietEnd(run)
      if (successors.length > 1)
        violations.push(`run ${short(run.run_id)} (${run.state}): ${successors.length} terminal messages`)
      else if (TERMINAL.has(run.state) && !quiet && successors.length === 0) {
        violations.push(`run ${short(run.run_id)} ended ${run.state} and the model never heard of it`)
      }
      // 6. nothing claimed past its lease
      if (!TERMINAL.has(run.state) && run.claim_expires_at !== null && run.claim_expires_at < now) {
        violations.push(`run ${short(run.run_id)} (${run.state}) still claimed past its lease`)
      }
    }
    // 7. no fallback during shutdown or hold
    for (const s of sends) {
      if (s.customType === "pi-workflows-deferred-turn" && (s.shuttingDown || s.userHold)) {
        violations.push(`fallback sent at step ${s.step} during ${s.shuttingDown ? "shutdown" : "user hold"}`)
      }
      // 8. no step reminder during shutdown or hold either
      if (s.customType === "pi-workflows-step-reminder" && (s.shuttingDown || s.userHold)) {
        violations.push(`reminder sent at step ${s.step} during ${s.shuttingDown ? "shutdown" : "user hold"}`)
      }
    }
    // 10. each waiting question at most once in the branch
    const questions = new Map<string, number>()
    for (const m of branch) {
      if (field(m.details, "state") !== "waiting") continue
      const request = field(m.details, "requestId") ?? "?"
      questions.set(request, (questions.get(request) ?? 0) + 1)
    }
    for (const [request, count] of questions)
      if (count > 1) violations.push(`request ${short(request)}: the question ${count} times in the branch`)
    // 9. at most 2 step reminders per step attempt, each ordinal once (duplicates count as such)
    const reminders = new Map<string, Array<string>>()
    for (const m of branch) {
      if (m.customType !== "pi-workflows-step-reminder") continue
      const attempt = field(m.details, "attemptId") ?? "?"
      const ordinal =
        typeof m.details === "object" && m.details !== null && "reminder" in m.details
          ? String(m.details.reminder)
          : "?"
      reminders.set(attempt, [...(reminders.get(attempt) ?? []), ordinal])
    }
    for (const [attempt, ordinals] of reminders) {
      if (ordinals.length > 2 || new Set(ordinals).size !== ordinals.length)
        violations.push(`attempt ${short(attempt)}: duplicate reminders ${ordinals.join(",")}`)
    }
    return {
      seed: schedule.seed,
      violations,
      trace,
      stats: {
        steps: schedule.steps.length,
        runs: runs.length,
        terminalRuns: runs.filter((r) => TERMINAL.has(r.state)).length,
        intents: intents.length,
        fallbacks: intents.filter((i) => i.resolution === "fallback").length,
        natural: intents.filter((i) => i.resolution === "workflowPrompt" || i.resolution === "presentation")
          .length,
        sends: sends.length,
        reminders: [...reminders.values()].reduce((n, o) => n + o.length, 0),
        questions: questions.size,
        answers,
        drainRounds: rounds
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** What a violation means for the promise, for the long-run summary (`cli.ts`). */
export const VIOLATION_KINDS = ["lost", "duplicate", "stuck", "other"] as const
export type ViolationKind = (typeof VIOLATION_KINDS)[number]

/** Classify one violation line by the invariant that produced it (the texts above). */
export const violationKind = (violation: string): ViolationKind => {
  if (/messages in the branch|pending intents|terminal messages|times in the branch/.test(violation))
    return "duplicate"
  if (/never delivered|never heard of it|the branch holds nothing/.test(violation)) return "lost"
  if (/pending and ineligible|still claimed past its lease/.test(violation)) return "stuck"
  return "other"
}

export const runEngineSeed = (seed: number, options: EngineSimOptions = {}) =>
  runEngineSchedule(generate(seed, undefined, { waits: options.waits === true }), options)
