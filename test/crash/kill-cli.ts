/**
 * `npm run crash:trials -- --trials N [--from S] [--scenario NAME] [--window MS] [--jobs J] [--keep DIR]`
 *
 * Runs N random-moment kill trials in real Pi (seeds S…S+N-1, scenarios in turn unless one is
 * named), prints one line per trial, a table of verdicts and one summary line (trials/s, lost,
 * duplicate, unanswered, stuck, recovery p50/p95/max), and exits 1 when any trial is not ok.
 * `--jobs J` runs the trials in J worker processes (each trial starts two Pi processes in turn).
 * `--keep DIR` leaves the evidence of every trial that is not ok under DIR (see `keepDir`).
 */
import { cliFlags } from "../support/cli-flags.ts"
import { emitResult, percentiles, runWorkers, seedsOf } from "../support/seed-pool.ts"
import {
  formatTrial,
  KILL_SCENARIOS,
  type KillScenario,
  type KillTrialResult,
  runKillTrial
} from "./random-kill.ts"

const { args, flag, count } = cliFlags()
const named = flag("scenario")
if (named !== undefined && !KILL_SCENARIOS.includes(named as KillScenario)) {
  process.stderr.write(`--scenario must be one of ${KILL_SCENARIOS.join(", ")}, got ${named}\n`)
  process.exit(2)
}
const scenarios: ReadonlyArray<KillScenario> = KILL_SCENARIOS.filter(
  (s) => named === undefined || s === named
)
const range = { from: count("from", 1), runs: count("trials", 20) }
const windowMs = flag("window") === undefined ? undefined : count("window", 0)
const jobs = Math.max(1, count("jobs", 1))
const worker = flag("worker") === undefined ? null : { index: count("worker", 0), jobs }

/** The scenario of a seed depends on its place in the range only, not on the worker. */
const keepDir = flag("keep")
const trial = (seed: number) =>
  runKillTrial(scenarios[(seed - range.from) % scenarios.length] ?? "selfCancel", seed, {
    ...(windowMs === undefined ? {} : { windowMs }),
    ...(keepDir === undefined ? {} : { keepDir })
  })

const isResult = (value: unknown): value is KillTrialResult =>
  typeof value === "object" && value !== null && "verdict" in value && "scenario" in value

if (worker !== null) {
  for (const seed of seedsOf(range, worker)) emitResult(await trial(seed))
} else {
  const results: Array<KillTrialResult> = []
  const started = performance.now()
  const collect = (result: KillTrialResult) => {
    results.push(result)
    console.log(formatTrial(result))
  }
  if (jobs === 1) for (const seed of seedsOf(range, null)) collect(await trial(seed))
  else {
    const { failedWorkers } = await runWorkers(import.meta.url, args, jobs, (value) => {
      if (isResult(value)) collect(value)
    })
    if (failedWorkers > 0) process.exitCode = 1
  }
  const seconds = (performance.now() - started) / 1_000
  const tally: Record<string, Record<string, number>> = {}
  const totals: Record<string, number> = { ok: 0, lost: 0, duplicate: 0, unanswered: 0, stuck: 0 }
  for (const r of results) {
    const row = tally[r.scenario] ?? {
      trials: 0,
      owed: 0,
      ok: 0,
      lost: 0,
      duplicate: 0,
      unanswered: 0,
      stuck: 0
    }
    tally[r.scenario] = row
    row.trials = (row.trials ?? 0) + 1
    if (r.owed) row.owed = (row.owed ?? 0) + 1
    row[r.verdict] = (row[r.verdict] ?? 0) + 1
    totals[r.verdict] = (totals[r.verdict] ?? 0) + 1
  }
  console.table(tally)
  const recovery = percentiles(results.map((r) => r.recoveryMs))
  console.log(
    `${results.length} of ${range.runs} trials in ${seconds.toFixed(0)} s with ${jobs} job${jobs === 1 ? "" : "s"} ` +
      `(${(results.length / seconds).toFixed(2)} trials/s, ${(seconds / Math.max(1, results.length)).toFixed(1)} s per trial)`
  )
  console.log(
    `summary: trials ${results.length}, violations ${results.length - (totals.ok ?? 0)}, lost ${totals.lost}, ` +
      `duplicate ${totals.duplicate}, unanswered ${totals.unanswered}, stuck ${totals.stuck}; ` +
      `recovery after restart p50 ${recovery.p50} ms, p95 ${recovery.p95} ms, max ${recovery.max} ms`
  )
  if (results.some((r) => r.verdict !== "ok") || results.length < range.runs) process.exitCode = 1
}
