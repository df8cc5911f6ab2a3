/**
 * Vitest glue for the extension's real-Pi scenarios: labs opened here are closed after each
 * test, and `expectScenario` plays a scenario from `scenarios.ts` and asserts its outcome.
 */
import { afterEach, expect } from "vitest"
import { Lab, type LabOptions } from "./lab.ts"
import { runScenario, type Scenario, type ScenarioResult } from "./scenarios.ts"

export { extensionEntry, requestIdIn } from "./lab.ts"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Open a lab that is closed after the test. */
export const startScenario = async (options: LabOptions): Promise<Lab> => {
  const lab = await Lab.open(options)
  cleanups.push(() => lab.close())
  return lab
}

/**
 * Play `scenario` and assert its exact numbers (requests, successor messages, intents and
 * their resolution path, run states) and every check it makes. Returns the result for more.
 */
export const expectScenario = async (
  scenario: Scenario,
  extension?: LabOptions["extension"]
): Promise<ScenarioResult> => {
  const result = await runScenario(scenario, extension)
  expect(result.failures.filter((f) => f.startsWith("play failed"))).toEqual([])
  expect(result.summary).toEqual(scenario.expected)
  expect(result.failures).toEqual([])
  return result
}
