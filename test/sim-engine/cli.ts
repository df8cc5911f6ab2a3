/**
 * `npm run test:sim-engine -- --runs N [--from S] [--seed S --verbose]`
 *
 * Engine simulation: schedules over the real application graph (engine, both stores behind
 * faults, the successor-turn core) with two processes, crashes, shutdowns and restarts. Prints
 * schedules per second, totals and each failing seed with its replay command; exits 1 on any
 * violation.
 */
import { runEngineSeed } from "./runner.ts"
import { cliFlags } from "../support/cli-flags.ts"

const { args, flag, count } = cliFlags()

const single = flag("seed")
if (single !== undefined) {
  const result = await runEngineSeed(count("seed", 0))
  if (args.includes("--verbose")) for (const line of result.trace) console.log(line)
  console.log(JSON.stringify(result.stats))
  for (const v of result.violations) console.log(`violation: ${v}`)
  if (result.violations.length > 0) process.exitCode = 1
} else {
  const runs = count("runs", 200)
  const from = count("from", 1)
  const started = performance.now()
  const totals: Record<string, number> = {}
  const failing: Array<number> = []
  for (let seed = from; seed < from + runs; seed++) {
    const result = await runEngineSeed(seed)
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
    if (result.violations.length > 0) {
      failing.push(seed)
      console.log(`seed ${seed}: ${result.violations.join("; ")}`)
      console.log(`  replay: npm run test:sim-engine -- --seed ${seed} --verbose`)
    }
  }
  const seconds = (performance.now() - started) / 1_000
  console.log(
    `engine sim: ${runs} schedules (seeds ${from}…${from + runs - 1}) in ${seconds.toFixed(1)} s, ` +
      `${(runs / seconds).toFixed(1)} schedules/s; ${failing.length} with violations`
  )
  console.log(`totals: ${JSON.stringify(totals)}`)
  if (failing.length > 0) process.exitCode = 1
}
