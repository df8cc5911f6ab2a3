/**
 * `npm run sim:engine -- --runs N [--from S] [--jobs J] [--waits] [--seed S --verbose]`
 *
 * Engine simulation: schedules over the real application graph (engine, both stores behind
 * faults, the successor-turn core) with two processes, crashes, shutdowns and restarts. Prints
 * each failing seed with its replay command, schedules per second and one summary line with the
 * violations by kind; exits 1 on any violation. `--jobs J` runs the range in J worker processes;
 * `--waits` generates schedules with waiting checkpoints (other schedules for the same seeds).
 */
import { cliFlags } from "../support/cli-flags.ts"
import { emitResult, runWorkers, seedsOf } from "../support/seed-pool.ts"
import { runEngineSeed, VIOLATION_KINDS, violationKind } from "./runner.ts"

const { args, flag, count } = cliFlags()

interface SeedOutcome {
  readonly seed: number
  readonly violations: ReadonlyArray<string>
  readonly stats: Readonly<Record<string, number>>
}

const isOutcome = (value: unknown): value is SeedOutcome =>
  typeof value === "object" && value !== null && "seed" in value && "violations" in value && "stats" in value

const single = flag("seed")
const range = { from: count("from", 1), runs: count("runs", 200) }
const jobs = Math.max(1, count("jobs", 1))
const worker = flag("worker") === undefined ? null : { index: count("worker", 0), jobs }
const options = { waits: args.includes("--waits") }

if (single !== undefined) {
  const result = await runEngineSeed(count("seed", 0), options)
  if (args.includes("--verbose")) for (const line of result.trace) console.log(line)
  console.log(JSON.stringify(result.stats))
  for (const v of result.violations) console.log(`violation: ${v}`)
  if (result.violations.length > 0) process.exitCode = 1
} else if (worker !== null) {
  for (const seed of seedsOf(range, worker)) {
    const { violations, stats } = await runEngineSeed(seed, options)
    emitResult({ seed, violations, stats } satisfies SeedOutcome)
  }
} else {
  const started = performance.now()
  const totals: Record<string, number> = {}
  const kinds: Record<string, number> = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0]))
  const failing: Array<number> = []
  let done = 0
  const collect = (result: SeedOutcome) => {
    done++
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
    for (const v of result.violations) {
      const kind = violationKind(v)
      kinds[kind] = (kinds[kind] ?? 0) + 1
    }
    if (result.violations.length > 0) {
      failing.push(result.seed)
      console.log(`seed ${result.seed}: ${result.violations.join("; ")}`)
      console.log(
        `  replay: npm run sim:engine -- --seed ${result.seed}${options.waits ? " --waits" : ""} --verbose`
      )
    }
  }
  if (jobs === 1) {
    for (const seed of seedsOf(range, null)) collect({ ...(await runEngineSeed(seed, options)), seed })
  } else {
    const { failedWorkers } = await runWorkers(import.meta.url, args, jobs, (value) => {
      if (isOutcome(value)) collect(value)
    })
    if (failedWorkers > 0) process.exitCode = 1
  }
  const seconds = (performance.now() - started) / 1_000
  const { from, runs } = range
  console.log(
    `engine sim: ${done} of ${runs} schedules (seeds ${from}…${from + runs - 1}) in ${seconds.toFixed(1)} s ` +
      `with ${jobs} job${jobs === 1 ? "" : "s"}, ${(done / seconds).toFixed(1)} schedules/s`
  )
  console.log(`totals: ${JSON.stringify(totals)}`)
  console.log(
    `summary: schedules ${done}, violations ${failing.length} (schedules with any; by kind: ` +
      `${VIOLATION_KINDS.map((k) => `${k} ${kinds[k] ?? 0}`).join(", ")}), unanswered n/a (fake model), ` +
      "recovery n/a (simulated time)"
  )
  if (failing.length > 0 || done < runs) process.exitCode = 1
}
