/**
 * A short seeded subset of the random-moment kill trials (the long run: `npm run crash:trials`).
 * Each seed names a kill time in the window that covers the start, the interruption, the
 * terminal write and the successor's append; the restarted Pi must leave exactly one successor
 * per ended run, answered by exactly one model request, and nothing stuck.
 */
import { describe, expect, it } from "vitest"
import { formatTrial, KILL_SCENARIOS, runKillTrial } from "./random-kill.ts"

const SEEDS = [5]

describe("SIGKILL at seeded random moments, then a restart on the same session and database", () => {
  for (const scenario of KILL_SCENARIOS) {
    for (const seed of SEEDS) {
      it(`${scenario}, seed ${seed}: one successor, answered once, nothing stuck`, async () => {
        const result = await runKillTrial(scenario, seed)
        console.log(formatTrial(result))
        expect(result.detail).toBe("")
        expect(result.verdict).toBe("ok")
      }, 60_000)
    }
  }
})
