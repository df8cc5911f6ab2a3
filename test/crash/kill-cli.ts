/**
 * `npm run test:crash -- --trials N [--from S] [--scenario NAME] [--window MS]`
 *
 * Runs N random-moment kill trials in real Pi (seeds S…S+N-1, scenarios in turn unless one is
 * named), prints one line per trial and a table of verdicts, and exits 1 when any trial is not ok.
 */
import { cliFlags } from "../support/cli-flags.ts"
import {
  formatTrial,
  KILL_SCENARIOS,
  type KillScenario,
  type KillTrialResult,
  runKillTrial
} from "./random-kill.ts"

const { flag, count } = cliFlags()
const named = flag("scenario")
if (named !== undefined && !KILL_SCENARIOS.includes(named as KillScenario)) {
  process.stderr.write(`--scenario must be one of ${KILL_SCENARIOS.join(", ")}, got ${named}\n`)
  process.exit(2)
}
const scenarios: ReadonlyArray<KillScenario> = KILL_SCENARIOS.filter(
  (s) => named === undefined || s === named
)
const trials = count("trials", 20)
const from = count("from", 1)
const windowMs = flag("window") === undefined ? undefined : count("window", 0)

const results: Array<KillTrialResult> = []
const started = performance.now()
for (let i = 0; i < trials; i++) {
  const seed = from + i
  const scenario = scenarios[i % scenarios.length] ?? "selfCancel"
  const result = await runKillTrial(scenario, seed, windowMs === undefined ? {} : { windowMs })
  results.push(result)
  console.log(formatTrial(result))
}
const tally: Record<string, Record<string, number>> = {}
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
}
console.table(tally)
const recoveries = results.map((r) => r.recoveryMs).sort((a, b) => a - b)
const pct = (p: number) =>
  Math.round(recoveries[Math.min(recoveries.length - 1, Math.floor(p * recoveries.length))] ?? 0)
console.log(
  `${results.length} trials in ${((performance.now() - started) / 1000).toFixed(0)} s; recovery after restart p50 ${pct(0.5)} ms, p95 ${pct(0.95)} ms, max ${pct(1)} ms`
)
if (results.some((r) => r.verdict !== "ok")) process.exitCode = 1
