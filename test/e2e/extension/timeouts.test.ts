/** Real Pi, step time limits: a routed timeout resolves through its recovery prompt; an unrouted one falls back. */
import { describe, it } from "vitest"
import { terminalTimeout, timeoutRecovery } from "./scenarios.ts"
import { expectScenario } from "./support.ts"

describe("step timeouts in real Pi", () => {
  it("timeout with a timed_out route: the recovery prompt resolves the intent, no fallback", async () => {
    await expectScenario(timeoutRecovery)
  })

  it("terminal timeout (no route): one fallback", async () => {
    await expectScenario(terminalTimeout)
  })
})
