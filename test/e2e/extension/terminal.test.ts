/** Real Pi: the terminal decision turn and `restart` chains (scenarios-terminal.ts). */
import { describe, expect, it } from "vitest"
import { runScenario } from "./scenario.ts"
import { terminalScenarios } from "./scenarios-terminal.ts"

describe("terminal turns in real Pi", () => {
  const only = process.env.TERMINAL_SCENARIO
  for (const scenario of terminalScenarios.filter((s) => only === undefined || s.id === only)) {
    it(scenario.title, async () => {
      const result = await runScenario(scenario)
      expect(result.failures).toEqual([])
    })
  }
})
