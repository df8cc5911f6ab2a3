/**
 * Real Pi, restarts: an eligible intent written while Pi was down is delivered once at session
 * start; a run parked by shutdown continues at the next start without any fallback.
 */
import { describe, it } from "vitest"
import { restartPending, shutdownResume } from "./scenarios.ts"
import { expectScenario } from "./support.ts"

describe("restart in real Pi", () => {
  it("a pending eligible intent is delivered once at session start; another restart sends nothing", async () => {
    await expectScenario(restartPending)
  })

  it("shutdown during a step parks the run quietly; the next start resumes it and resends the step", async () => {
    await expectScenario(shutdownResume)
  })
})
