/**
 * Run one schedule in a fresh world and judge it: execute every step (letting the other fibers
 * run for the step's gap), check that resolved rows never change after each step, then bring
 * the session to "live and idle" (faults cleared, hold released, leases expired, turns settled)
 * and check every invariant. Also runs batches and formats the replay command of a failure.
 */
import { rmSync } from "node:fs"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Effect, Exit, Logger, LogLevel, Schema, Scope } from "effect"
import { checkOutcome, type IntentRow, type Violation } from "./invariants.ts"
import { describeStep, generate, type GenerateOptions, type Schedule, SESSION } from "./schedule.ts"
import { makeSimClock, SIM_EPOCH } from "./sim-clock.ts"
import { CLAIM_RETRY_MS, LEASE_MS, makeWorld } from "./world.ts"

export interface RunResult {
  readonly seed: number
  readonly steps: number
  readonly violations: ReadonlyArray<Violation>
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
  Schema.Array(Schema.Struct({ intent_id: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown })))
)

const readRows = (db: BetterSqlite.Database): ReadonlyArray<IntentRow> =>
  decodeRows(db.prepare("SELECT * FROM workflow_turn_intents ORDER BY intent_id").all()).map((row) => ({ ...row }))

/** The command that replays one seed (printed for every failure). */
export const replayCommand = (seed: number, options: GenerateOptions = {}): string =>
  `npm run test:sim -- --seed ${seed}${options.steps === undefined ? "" : ` --steps ${options.steps}`} --verbose`

export const runSchedule = (schedule: Schedule, dir: string): Promise<RunResult> => {
  const filename = join(dir, `sim-${schedule.seed}.db`)
  const clock = makeSimClock()
  const trace: string[] = []
  const resolvedChanges: string[] = []
  let db: BetterSqlite.Database | undefined

  const program = Effect.gen(function* () {
    ;(globalThis as any).PH ??= [0,0,0]
    const T0 = performance.now()
    const world = yield* makeWorld(schedule, filename, clock)
    yield* world.startProc(0)
    if (schedule.twoProcs) yield* world.startProc(1)
    const raw = new BetterSqlite(filename, { readonly: true })
    db = raw
    const resolved = new Map<string, string>()
    const checkResolved = (label: string) => {
      const rows = decodeJsonRows(raw.prepare("SELECT * FROM workflow_turn_intents WHERE resolved_at IS NOT NULL").all())
      const now = new Map(rows.map((row) => [row.intent_id, JSON.stringify(row)]))
      for (const [id, before] of resolved) {
        const after = now.get(id)
        if (after !== before) resolvedChanges.push(`${id.slice(-10)} changed at ${label}: ${before} → ${after ?? "gone"}`)
      }
      for (const [id, row] of now) if (!resolved.has(id)) resolved.set(id, row)
    }

    for (const [index, { step, gap }] of schedule.steps.entries()) {
      world.setStep(index)
      // Pi and engine events reach the runners between their real async points (a fiber's store
      // calls and sends are synchronous in Pi); crashes and store faults strike mid-flight.
      if (world.isEvent(step)) yield* clock.quiesce
      yield* world.execute(step)
      for (let i = 0; i < gap; i++) yield* Effect.yieldNow()
      checkResolved(`step ${index}`)
      trace.push(`${String(index).padStart(3)} ${describeStep(step)}  [${yield* world.fake.phase}, t+${clock.now() - SIM_EPOCH}]`)
    }

    const T1 = performance.now()
    // Live and idle: faults cleared, hold released, a new process after shutdown, leases expired.
    world.setStep(schedule.steps.length)
    for (const proc of world.liveProcs()) yield* proc.faults.clear()
    yield* world.fake.failNextSends(0)
    yield* world.fake.setUserHold(false)
    if ((yield* world.lifecycle).shuttingDown || world.liveProcs().length === 0) yield* world.restartAll
    const pendingEligible = () =>
      readRows(raw).filter((r) => r.target_session_id === SESSION && r.resolved_at === null && r.eligible_at !== null)
    let rounds = 0
    for (; rounds < 100; rounds++) {
      yield* clock.advance(LEASE_MS + CLAIM_RETRY_MS)
      if ((yield* world.fake.phase) !== "idle") {
        yield* world.settle
        yield* clock.quiesce
        continue
      }
      const naturalsWaiting = world.naturals.some((n) => n.outcome === "pending")
      if (pendingEligible().length === 0 && !naturalsWaiting) break
      const proc = world.liveProcs()[0]
      if (proc !== undefined) yield* Effect.forkIn(Effect.ignore(proc.coordinator.syncFallbacks("periodic")), proc.scope)
      yield* clock.quiesce
    }
    checkResolved("liveness")
    const T2 = performance.now()
    ;(globalThis as any).PH ??= [0,0,0]; (globalThis as any).PH[0]+=T1-T0; (globalThis as any).PH[1]+=T2-T1
    trace.push(`--- liveness: ${rounds} rounds`)
    const outcome = {
      rows: readRows(raw),
      branch: yield* world.fake.branch,
      sends: world.sends,
      publishes: world.publishes,
      naturals: world.naturals,
      notifications: yield* world.fake.notifications,
      quietProblems: world.quietProblems,
      resolvedChanges
    }
    for (const proc of world.liveProcs()) yield* Scope.close(proc.scope, Exit.void)
    const stats: Record<string, number> = {
      intents: outcome.rows.length,
      resolved: outcome.rows.filter((r) => r.resolved_at !== null).length,
      fallbacks: outcome.rows.filter((r) => r.resolution === "fallback").length,
      natural: outcome.rows.filter((r) => r.resolution === "workflowPrompt" || r.resolution === "presentation").length,
      sends: outcome.sends.length,
      publishes: outcome.publishes.length,
      warnings: outcome.publishes.filter((p) => p.result?.warning != null).length,
      livenessRounds: rounds
    }
    return { violations: checkOutcome(outcome), stats }
  })

  const scheduled = program.pipe(
    Effect.withClock(clock),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.None)
  )
  return Effect.runPromiseExit(scheduled).then((exit) => {
    db?.close()
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${filename}${suffix}`, { force: true })
    if (Exit.isFailure(exit)) {
      return {
        seed: schedule.seed,
        steps: schedule.steps.length,
        violations: [{ invariant: "the simulation runs", detail: String(exit.cause).slice(0, 2_000) }],
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
  readonly elapsedMs: number
  readonly totals: Readonly<Record<string, number>>
}

/** Run `runs` schedules with seeds `firstSeed`, `firstSeed + 1`, … */
export const runBatch = async (
  firstSeed: number,
  runs: number,
  dir: string,
  options: GenerateOptions = {}
): Promise<BatchResult> => {
  const started = performance.now()
  const failures: RunResult[] = []
  const totals: Record<string, number> = { steps: 0 }
  for (let i = 0; i < runs; i++) {
    const result = await runSchedule(generate(firstSeed + i, options), dir)
    totals.steps = (totals.steps ?? 0) + result.steps
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
    if (result.violations.length > 0) failures.push(result)
  }
  return { runs, failures, elapsedMs: performance.now() - started, totals }
}

export const formatFailure = (result: RunResult, options: GenerateOptions = {}): string =>
  [
    `seed ${result.seed}: ${result.violations.length} violation(s)`,
    ...result.violations.slice(0, 8).map((v) => `  - ${v.invariant}: ${v.detail}`),
    `  replay: ${replayCommand(result.seed, options)}`
  ].join("\n")
