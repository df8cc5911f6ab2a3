/**
 * `npm run sim -- --runs N [--from S] [--seed S] [--steps K] [--strict] [--verbose]`
 *
 * Without `--seed`: runs N schedules with seeds 1…N (or S…S+N-1 with `--from S`) and reports
 * schedules per second, totals and every failing seed with its replay command. With `--seed`:
 * replays that one schedule and prints its outcome (with `--verbose`, every step too).
 * Exits 1 when any schedule violates an invariant; schedules that only hit the known gap
 * (docs/reliability.md) are counted and listed, and fail too with `--strict`.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { formatFailure, openSimDatabase, runBatch, runSchedule } from "./runner.ts"
import { generate, type GenerateOptions } from "./schedule.ts"
import { cliFlags } from "../support/cli-flags.ts"

const { args, flag, count: number } = cliFlags()

const verbose = args.includes("--verbose")
const strict = args.includes("--strict")
const steps = flag("steps") === undefined ? undefined : number("steps", 0)
const options: GenerateOptions = steps === undefined ? {} : { steps }
const dir = mkdtempSync(join(tmpdir(), "pwt-sim-"))

try {
  const seed = flag("seed")
  if (seed !== undefined) {
    const database = await openSimDatabase(dir)
    const result = await runSchedule(generate(number("seed", 0), options), database)
    await database.close()
    if (verbose) for (const line of result.trace) console.log(line)
    console.log(JSON.stringify(result.stats))
    if (result.violations.length > 0 || result.knownGaps.length > 0) {
      console.log(formatFailure(result, options))
      if (result.violations.length > 0 || strict) process.exitCode = 1
    } else console.log(`seed ${result.seed}: ${result.steps} steps, no violation`)
  } else {
    const runs = number("runs", 1_000)
    const from = number("from", 1)
    const batch = await runBatch(from, runs, dir, { ...options, strict })
    const perSecond = batch.runs / (batch.elapsedMs / 1_000)
    console.log(
      `sim: ${batch.runs} schedules (seeds ${from}…${from + runs - 1}) in ${(batch.elapsedMs / 1_000).toFixed(1)} s, ` +
        `${perSecond.toFixed(0)} schedules/s; ${batch.failures.length} with violations, ` +
        `${batch.knownGaps.length} with only the known gap`
    )
    console.log(`totals: ${JSON.stringify(batch.totals)}`)
    for (const failure of batch.failures.slice(0, 20)) console.log(formatFailure(failure, options))
    const gapSeeds = batch.knownGaps.map((r) => r.seed)
    if (gapSeeds.length > 0) console.log(`known gap seeds: ${gapSeeds.slice(0, 30).join(" ")}`)
    if (batch.failures.length > 0) process.exitCode = 1
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
