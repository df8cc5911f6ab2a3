/**
 * Real Pi, paths that owe no automatic turn beyond the workflow's own messages: a completed run,
 * the user's direct cancel, the user's Escape (held until resume), rejected input, a broken file.
 */
import { describe, it } from "vitest"
import {
  brokenFile,
  cancelDuringStep,
  completedRun,
  directCancel,
  escapeHold,
  invalidInput
} from "./scenarios.ts"
import { expectScenario } from "./support.ts"

describe("quiet paths in real Pi", () => {
  it("completed run: one presentation, no fallback, no intent", async () => {
    await expectScenario(completedRun)
  })

  it("direct /workflow cancel: no model turn, no intent", async () => {
    await expectScenario(directCancel)
  })

  it("/workflow cancel while the model works on the step: that turn stops too, no model turn follows", async () => {
    await expectScenario(cancelDuringStep)
  })

  it("Escape during a step turn: no intent, no automatic turn, run held; /workflow resume continues", async () => {
    await expectScenario(escapeHold)
  })

  it("invalid tool input: a tool error in the current turn, no run, no intent", async () => {
    await expectScenario(invalidInput)
  })

  it("a broken workflow file is reported by name while the other workflow works", async () => {
    await expectScenario(brokenFile)
  })
})
