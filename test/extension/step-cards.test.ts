/** The step card and the one-line notification: bounded, sanitized, and never a raw type name. */
import { describe, expect, it } from "vitest"
import { agentStepMessage } from "../../src/engine/messages.ts"
import { reminderMessage } from "../../src/domain/step-reminder.ts"
import {
  RENDERERS,
  notificationLines,
  reminderLines,
  stepCardLines
} from "../../src/extension/message-cards.ts"

const step = agentStepMessage({
  workflowName: "release",
  runId: "run-1",
  nodeId: "draft",
  attemptId: "a-1",
  requestId: "req-1",
  prompt: "Draft the notes.\nUse the changelog.\nKeep it short.\nMention the date.\nSign it."
})

describe("the step card", () => {
  it("collapsed: workflow, step, run and request, and the prompt's first lines", () => {
    expect(stepCardLines(step, false).map((line) => line.text)).toEqual([
      "⏵ Workflow step · release · draft",
      "run run-1 · request req-1",
      "Draft the notes.",
      "Use the changelog.",
      "Keep it short.",
      "…"
    ])
  })

  it("expanded: the whole message the model read", () => {
    const text = stepCardLines(step, true).map((line) => line.text)
    expect(text).toContain("Sign it.")
    expect(text.join("\n")).toContain('"requestId": "req-1"')
  })

  it("hostile or missing details give a safe card", () => {
    const lines = stepCardLines(
      { content: "x\u202e\u001b[31mred", details: { nodeId: 5, workflowName: "a\u200bb" } },
      false
    )
    expect(lines.map((line) => line.text)).toEqual(["⏵ Workflow step · ab · step", "xred"])
    expect(stepCardLines({ content: null }, false)[0]?.text).toBe("⏵ Workflow step · workflow · step")
  })
})

describe("the notification line", () => {
  it("one muted line, progress marked as such, credentials redacted", () => {
    expect(
      notificationLines({
        content: "Workflow w (run r): pushing with token ghp_0123456789abcdefghijABCDEFGHIJ012345",
        details: { kind: "progress" }
      })
    ).toEqual([{ tone: "muted", text: "… Workflow w (run r): pushing with token [REDACTED]" }])
    expect(
      notificationLines({ content: "Workflow w (run r) completed", details: { kind: "final" } })[0]?.text
    ).toBe("■ Workflow w (run r) completed")
  })
})

describe("renderers", () => {
  it("cover every message type the extension shows", () => {
    expect(RENDERERS.map(([type]) => type).sort()).toEqual([
      "pi-workflows-agent-step",
      "pi-workflows-deferred-turn",
      "pi-workflows-notification",
      "pi-workflows-presentation",
      "pi-workflows-step-reminder"
    ])
  })
})

describe("the reminder card", () => {
  const reminder = reminderMessage(
    {
      runId: "run-1",
      workflowName: "release",
      nodeId: "draft\u202e",
      attemptId: "a-1",
      requestId: "req-1",
      deadline: null
    },
    2,
    0
  )
  it("collapsed: one warning line; expanded: the whole message the model read", () => {
    expect(reminderLines(reminder, false)).toEqual([
      { tone: "warning", text: "⏵ Step reminder 2 of 2 · draft · run run-1" }
    ])
    const expanded = reminderLines(reminder, true).map((line) => line.text)
    expect(expanded.join("\n")).toContain('"requestId": "req-1"')
    expect(expanded.join("\n")).toContain("This is the last reminder")
  })
})
