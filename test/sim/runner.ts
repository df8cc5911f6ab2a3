/**
 * Run one schedule in a fresh world and judge it: execute every step (letting the other fibers
 * run for the step's gap), check that resolved rows never change after each step, then bring
 * the session to "live and idle" (faults cleared, hold released, leases expired, turns settled)
 * and check every invariant. Also runs batches and formats the replay command of a failure.
 */
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Effect, Exit, Layer, Logger, LogLevel, Schema, Scope } from "effect"
import { Database } from "../../src/store/database.ts"
import { checkOutcome, type IntentRow, type Violation } from "./invariants.ts"
import { describeStep, generate, type GenerateOptions, type Schedule, SESSION } from "./schedule.ts"
import { makeSimClock, SIM_EPOCH } from "./sim-clock.ts"
import type { Mutation } from "./proc.ts"
import { CLAIM_RETRY_MS, type Connection, LEASE_MS, makeWorld } from "./world.ts"

export interface RunResult {
  readonly seed: number
  readonly steps: number
  readonly violations: ReadonlyArray<Violation>
  /** Violations of the known gap (see `Violation.known`); failures only in strict runs. */
  readonly knownGaps: ReadonlyArray<Violation>
  readonly trace: ReadonlyArray<string>
  readonly stats: Readonly<Record<string, number>>
}

const Row = Schema.Struct({
  intent_id: Schema.String,
  target_session_id: Schema.String,
  run_id: Schema.String,
  eligible_at: Schema.NullOr(Schema.String),
  resolved_at: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Schema.String),
  resolution_message_id: Schema.NullOr(Schema.String)
})
const decodeRows = Schema.decodeUnknownSync(Schema.Array(Row))
const decodeJsonRows = Schema.decodeUnknownSync(
  Schema.Array(
    Schema.Struct({ intent_id: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  )
)

/** Statements on the raw handle, prepared once per batch. */
const rawQueries = (db: BetterSqlite.Database) => {
  const all = db.prepare("SELECT * FROM workflow_turn_intents ORDER BY intent_id")
  const resolved = db.prepare("SELECT * FROM workflow_turn_intents WHERE resolved_at IS NOT NULL")
  const version = db.prepare("PRAGMA data_version").pluck()
  return {
    rows: (): ReadonlyArray<IntentRow> => decodeRows(all.all()),
    resolved: () => decodeJsonRows(resolved.all()),
    version: () => Number(version.get())
  }
}

/** The command that replays one seed (printed for every failure). */
export const replayCommand = (seed: number, options: GenerateOptions = {}): string =>
  `npm run sim -- --seed ${seed}${options.steps === undefined ? "" : ` --steps ${options.steps}`} --verbose`

/**
 * The batch's database: one file, one connection per runner slot and a raw handle for the
 * checks, opened once. Each schedule starts from an empty intent table (`reset`).
 */
export interface SimDatabase {
  readonly connections: readonly [Connection, Connection]
  readonly raw: BetterSqlite.Database
  readonly queries: ReturnType<typeof rawQueries>
  readonly close: () => Promise<void>
}

export const openSimDatabase = async (dir: string): Promise<SimDatabase> => {
  const filename = join(dir, "sim.db")
  const scope = Effect.runSync(Scope.make())
  const open = () =>
    Effect.runPromise(Layer.build(Database.layer({ filename, busyTimeoutMs: 0 })).pipe(Scope.extend(scope)))
  const connections = [await open(), await open()] as const
  const raw = new BetterSqlite(filename)
  return {
    connections,
    raw,
    queries: rawQueries(raw),
    close: async () => {
      raw.close()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

export const runSchedule = (
  schedule: Schedule,
  database: SimDatabase,
  mutation: Mutation | null = null
): Promise<RunResult> => {
  const { raw, queries } = database
  raw.exec("DELETE FROM workflow_turn_intents")
  const clock = makeSimClock()
  const trace: string[] = []
  const resolvedChanges: string[] = []
  const resolved = new Map<string, string>()
  let seen = -1
  const checkResolved = (label: string) => {
    // Nothing committed since the last look: nothing can have changed.
    const version = queries.version()
    if (version === seen) return
    seen = version
    const rows = queries.resolved()
    const now = new Map(rows.map((row) => [row.intent_id, JSON.stringify(row)]))
    for (const [id, before] of resolved) {
      const after = now.get(id)
      if (after !== before) {
        resolvedChanges.push(`${id.slice(-10)} changed at ${label}: ${before} → ${after ?? "gone"}`)
      }
    }
    for (const [id, row] of now) if (!resolved.has(id)) resolved.set(id, row)
  }

  const program = Effect.gen(function* () {
    const world = yield* makeWorld(schedule, database.connections, clock, mutation)
    yield* world.startProc(0)
    if (schedule.twoProcs) yield* world.startProc(1)

    for (const [index, { step, gap }] of schedule.steps.entries()) {
      world.setStep(index)
      // Pi and engine events reach the runners between their real async points (a fiber's store
      // calls and sends are synchronous in Pi); crashes and store faults strike mid-flight.
      if (world.isEvent(step)) yield* clock.quiesce
      yield* world.execute(step)
      for (let i = 0; i < gap; i++) yield* Effect.yieldNow()
      checkResolved(`step ${index}`)
      trace.push(
        `${String(index).padStart(3)} ${describeStep(step)}  [${yield* world.fake.phase}, t+${clock.now() - SIM_EPOCH}]`
      )
    }

    // Live and idle: faults cleared, hold released, a new process after shutdown, leases expired.
    world.setStep(schedule.steps.length)
    for (const proc of world.liveProcs()) yield* proc.faults.clear()
    world.clearSendFailures()
    yield* world.fake.setUserHold(false)
    if ((yield* world.lifecycle).shuttingDown || world.liveProcs().length === 0) yield* world.restartAll
    const pendingEligible = () =>
      queries
        .rows()
        .filter((r) => r.target_session_id === SESSION && r.resolved_at === null && r.eligible_at !== null)
    let rounds = 0
    for (; rounds < 100; rounds++) {
      yield* clock.advance(LEASE_MS + CLAIM_RETRY_MS)
      if ((yield* world.fake.phase) !== "idle") {
        yield* world.settle
        yield* clock.quiesce
        continue
      }
      const naturalsWaiting = world.naturals.some((n) => n.outcome === "pending")
      if (pendingEligible().length === 0 && !naturalsWaiting && !world.writesPending()) break
      const proc = world.liveProcs()[0]
      if (proc !== undefined)
        yield* Effect.forkIn(Effect.ignore(proc.coordinator.syncFallbacks("periodic")), proc.scope)
      yield* clock.quiesce
    }
    checkResolved("liveness")
    trace.push(`--- liveness: ${rounds} rounds`)
    for (const send of world.sends) {
      trace.push(
        `    sent at step ${send.step} by p${send.proc}: ${send.customType} ${send.turnIntentId?.slice(-10) ?? "-"} (${send.phase}${send.delivered ? "" : ", lost"})`
      )
    }
    const outcome = {
      rows: queries.rows(),
      branch: yield* world.fake.branch,
      sends: world.sends,
      publishes: world.publishes,
      naturals: world.naturals,
      notifications: yield* world.fake.notifications,
      quietProblems: world.quietProblems,
      resolvedChanges,
      lostWithProcess: world.lostWithProcess
    }
    for (const proc of world.liveProcs()) yield* Scope.close(proc.scope, Exit.void)
    const stats: Record<string, number> = {
      intents: outcome.rows.length,
      resolved: outcome.rows.filter((r) => r.resolved_at !== null).length,
      fallbacks: outcome.rows.filter((r) => r.resolution === "fallback").length,
      natural: outcome.rows.filter(
        (r) => r.resolution === "workflowPrompt" || r.resolution === "presentation"
      ).length,
      sends: outcome.sends.length,
      publishes: outcome.publishes.length,
      warnings: outcome.publishes.filter((p) => p.result?.warning != null).length,
      livenessRounds: rounds
    }
    const judged = checkOutcome(outcome)
    stats.knownGaps = judged.filter((v) => v.known === true).length
    stats.lostWithProcess = world.lostWithProcess.length
    return {
      violations: judged.filter((v) => v.known !== true),
      knownGaps: judged.filter((v) => v.known === true),
      stats
    }
  })

  const scheduled = program.pipe(
    Effect.withClock(clock),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.None)
  )
  return Effect.runPromiseExit(scheduled).then((exit) => {
    if (Exit.isFailure(exit)) {
      return {
        seed: schedule.seed,
        steps: schedule.steps.length,
        violations: [{ invariant: "the simulation runs", detail: String(exit.cause).slice(0, 2_000) }],
        knownGaps: [],
        trace,
        stats: {}
      }
    }
    return { seed: schedule.seed, steps: schedule.steps.length, trace, ...exit.value }
  })
}

export interface BatchResult {
  readonly runs: number
  readonly failures: ReadonlyArray<RunResult>
  /** Schedules that hit the known gap (and nothing else). */
  readonly knownGaps: ReadonlyArray<RunResult>
  readonly elapsedMs: number
  readonly totals: Readonly<Record<string, number>>
}

/** Run `runs` schedules with seeds `firstSeed`, `firstSeed + 1`, … */
export const runBatch = async (
  firstSeed: number,
  runs: number,
  dir: string,
  options: GenerateOptions & { readonly mutation?: Mutation; readonly strict?: boolean } = {}
): Promise<BatchResult> => {
  const started = performance.now()
  const failures: RunResult[] = []
  const knownGaps: RunResult[] = []
  const totals: Record<string, number> = { steps: 0 }
  const database = await openSimDatabase(dir)
  for (let i = 0; i < runs; i++) {
    const result = await runSchedule(generate(firstSeed + i, options), database, options.mutation ?? null)
    totals.steps = (totals.steps ?? 0) + result.steps
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
    if (result.violations.length > 0 || (options.strict === true && result.knownGaps.length > 0)) {
      failures.push(result)
    } else if (result.knownGaps.length > 0) knownGaps.push(result)
  }
  await database.close()
  return { runs, failures, knownGaps, elapsedMs: performance.now() - started, totals }
}

export const formatFailure = (result: RunResult, options: GenerateOptions = {}): string =>
  [
    `seed ${result.seed}: ${result.violations.length} violation(s), ${result.knownGaps.length} known gap(s)`,
    ...[...result.violations, ...result.knownGaps]
      .slice(0, 8)
      .map((v) => `  - ${v.known === true ? "[known gap] " : ""}${v.invariant}: ${v.detail}`),
    `  replay: ${replayCommand(result.seed, options)}`
  ].join("\n")
