/**
 * The extension's end-to-end scenarios in real Pi. The vitest files and `npm run demo` play the
 * same list; each scenario states the exact number of model requests, of successor messages in
 * the session file, and the turn intents with their resolution path.
 */
import {
  crashAfterStart,
  launchFailure,
  restartPending,
  selfCancel,
  terminalTimeout,
  timeoutRecovery
} from "./scenarios-owed.ts"
import {
  brokenFile,
  cancelDuringStep,
  completedRun,
  directCancel,
  escapeHold,
  invalidInput,
  shutdownResume
} from "./scenarios-quiet.ts"
import type { Scenario } from "./scenario.ts"

export { runScenario, type Scenario, type ScenarioResult, type Summary, summarize } from "./scenario.ts"
export {
  brokenFile,
  cancelDuringStep,
  completedRun,
  crashAfterStart,
  directCancel,
  escapeHold,
  invalidInput,
  launchFailure,
  restartPending,
  selfCancel,
  shutdownResume,
  terminalTimeout,
  timeoutRecovery
}

/** Every real-Pi scenario, in the order the demo plays them. */
export const SCENARIOS: ReadonlyArray<Scenario> = [
  selfCancel,
  crashAfterStart,
  launchFailure,
  timeoutRecovery,
  terminalTimeout,
  completedRun,
  directCancel,
  cancelDuringStep,
  restartPending,
  escapeHold,
  shutdownResume,
  invalidInput,
  brokenFile
]
