/** `--jobs J` long runs: the workers share a range exactly, and report what a serial run does. */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { percentiles, seedsOf } from "../support/seed-pool.ts"

const ROOT = join(import.meta.dirname, "..", "..")

const simEngine = (...args: Array<string>) => {
  const run = spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--no-warnings", "test/sim-engine/cli.ts", ...args],
    { cwd: ROOT, encoding: "utf8", timeout: 120_000 }
  )
  const line = (prefix: string) => run.stdout.split("\n").find((l) => l.startsWith(prefix)) ?? ""
  return { status: run.status, totals: line("totals:"), summary: line("summary:") }
}

describe("seed pool", () => {
  it("every seed of the range goes to exactly one worker", () => {
    const range = { from: 7, runs: 11 }
    const shares = [0, 1, 2].map((index) => seedsOf(range, { index, jobs: 3 }))
    expect(shares.flat().sort((a, b) => a - b)).toEqual(seedsOf(range, null))
    expect(seedsOf(range, null)).toEqual([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17])
  })

  it("percentiles of recovery times", () => {
    expect(percentiles([300, 100, 200, 400])).toEqual({ p50: 300, p95: 400, max: 400 })
    expect(percentiles([])).toEqual({ p50: 0, p95: 0, max: 0 })
  })

  it("sim:engine with --jobs 2 reports the same totals as a serial run", () => {
    const serial = simEngine("--runs", "2", "--from", "3")
    const parallel = simEngine("--runs", "2", "--from", "3", "--jobs", "2")
    expect(serial.status).toBe(0)
    expect(parallel.status).toBe(0)
    expect(parallel.totals).not.toBe("")
    expect(parallel.totals).toBe(serial.totals)
    expect(parallel.summary).toBe(serial.summary)
    expect(parallel.summary).toMatch(/^summary: schedules 2, violations 0 /)
  }, 240_000)
})
