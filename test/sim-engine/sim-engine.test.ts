/**
 * The engine simulation's quick batch (the long run: `npm run test:sim-engine -- --runs N`):
 * seeded schedules over the real application graph must keep every invariant, and a world that
 * deliberately breaks delivery must be caught, so the checker itself can fail.
 */
import { describe, expect, it } from "vitest"
import { runEngineSeed } from "./runner.ts"

/**
 * Known gap (docs/reliability.md, "Two live processes on one session"): a completed run with no
 * turn intent can be presented by both processes when one presents it while the other's session
 * start (or periodic pass, after the grace) sees it unrecorded. Pinned below: when the gap is
 * closed these seeds come clean and the pin fails.
 */
const KNOWN_GAP_SEEDS = [57]
const QUICK_SEEDS = Array.from({ length: 60 }, (_, i) => i + 1).filter(
  (seed) => !KNOWN_GAP_SEEDS.includes(seed)
)

describe("engine simulation", () => {
  it("59 seeded schedules (two processes, faults on both stores, crashes, shutdowns): no violation", async () => {
    const failures: Array<string> = []
    for (const seed of QUICK_SEEDS) {
      const result = await runEngineSeed(seed)
      if (result.violations.length > 0) failures.push(`seed ${seed}: ${result.violations.join("; ")}`)
    }
    expect(failures).toEqual([])
  }, 120_000)

  it("pin: the known gap still shows as a second presentation of one completed run", async () => {
    for (const seed of KNOWN_GAP_SEEDS) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([expect.stringMatching(/\(completed\): 2 terminal messages$/)])
    }
  })

  it("the checker catches a world that sends every resolving message twice, or drops fallbacks", async () => {
    const caught = { doubleSend: 0, dropFallback: 0 }
    for (const seed of QUICK_SEEDS.slice(0, 30)) {
      for (const mutation of ["doubleSend", "dropFallback"] as const) {
        const result = await runEngineSeed(seed, { mutation })
        if (result.violations.length > 0) caught[mutation]++
      }
    }
    expect(caught.doubleSend).toBeGreaterThan(0)
    expect(caught.dropFallback).toBeGreaterThan(0)
  }, 120_000)
})
