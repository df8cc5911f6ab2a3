/** The terminal turn's card: bounded collapsed summary, full expanded content, safe on bad input. */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { describe, expect, it } from "vitest"
import { cardLines } from "../../src/extension/message-cards.ts"
import { CARD_TYPES, RENDERERS, registerDeferredTurnRenderer } from "../../src/extension/message-cards.ts"
import { withDecision, terminalDecision } from "../../src/terminal/terminal-decision.ts"
import { terminalFingerprint } from "../../src/terminal/terminal-outcome.ts"
import { completed, ending, run } from "./fixtures.ts"

const terminalMessage = (record: Parameters<typeof terminalDecision>[0]) => {
  const decision = terminalDecision(record, null)
  if (decision === null) throw new Error("not terminal")
  return withDecision(
    {
      customType: "pi-workflows-deferred-turn",
      content: "Workflow turn notice.",
      display: true,
      details: { runId: record.runId }
    },
    decision
  )
}
const collapsed = (message: { content: unknown; details?: unknown }) =>
  cardLines(message, false)
    .map((line) => line.text)
    .join("\n")

describe("terminal card", () => {
  it("collapsed: workflow, state, run, reason and restarts n/3; no input, result, fingerprint or instructions", () => {
    const record = run({
      input: { secretPlan: "do X" },
      ...ending("maxSteps"),
      error: { message: 'the run reached maxSteps (3) before visiting node "n"', nodeId: "n", original: null }
    })
    const message = terminalMessage(record)
    const text = collapsed(message)
    expect(text).toContain("Workflow ended · build · failed")
    expect(text).toContain(`run ${record.runId}`)
    expect(text).toContain("reason maxSteps")
    expect(text).toContain("restarts 0/3")
    for (const hidden of [
      "secretPlan",
      "Input (exact)",
      "Decide what happens next",
      "terminal:",
      terminalFingerprint(record)
    ]) {
      expect(text).not.toContain(hidden)
    }
    const expanded = cardLines(message, true)
      .map((line) => line.text)
      .join("\n")
    expect(expanded).toContain("secretPlan")
    expect(expanded).toContain("Decide what happens next")
  })

  it("renders completed, failed, timed-out, cancelled, launch-failure and maxSteps endings", () => {
    const endings = [
      [completed({ ok: true }), "completed", null],
      [run(), "failed", null],
      [
        run({ state: "timed_out", error: { message: "timed out after 5 ms", nodeId: "n", original: null } }),
        "timed_out",
        "reason timedOut"
      ],
      [
        run({
          state: "cancelled",
          ...ending("cancelled", "agent"),
          error: { message: "cancelled by the agent", nodeId: "n", original: null }
        }),
        "cancelled",
        "reason agentCancelled"
      ],
      [
        run({
          stepCount: 0,
          ...ending("launchFailed"),
          error: { message: "workflow gone", nodeId: null, original: null }
        }),
        "failed",
        "reason launchFailed"
      ],
      [
        run({
          ...ending("maxSteps"),
          error: {
            message: 'the run reached maxSteps (2) before visiting node "n"',
            nodeId: "n",
            original: null
          }
        }),
        "failed",
        "reason maxSteps"
      ]
    ] as const
    for (const [record, state, reason] of endings) {
      const text = collapsed(terminalMessage(record))
      expect(text).toContain(`· ${state}`)
      if (reason !== null) expect(text).toContain(reason)
    }
  })

  it("sanitizes hostile fields and renders malformed details as a generic card", () => {
    const hostile = {
      runId: "r\u001b[2J1",
      workflowName: `\u001b]0;title\u0007${"w".repeat(400)}`,
      observedState: "failed\r\n",
      reasonKind: "failed",
      restartCount: 1,
      restartLimit: 3
    }
    const text = collapsed({ content: "x", details: hostile })
    expect([...text].some((c) => c !== "\n" && (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))).toBe(
      false
    )
    expect(text.split("\n")[0]?.length ?? 0).toBeLessThan(140)
    for (const bad of [{ reasonKind: 7 }, { restartCount: "1" }, "details", null]) {
      const lines = cardLines({ content: "full text", details: bad }, false)
      expect(lines[0]?.text).toContain("Workflow turn · workflow")
      expect(lines.map((l) => l.text).join("\n")).not.toContain("full text")
    }
  })

  it("registers once per card type; drawing a restored message adds no entry and starts no turn", () => {
    const registered: Array<[string, unknown]> = []
    let sends = 0
    const pi = {
      registerMessageRenderer: (type: string, renderer: unknown) => registered.push([type, renderer]),
      sendMessage: () => {
        sends += 1
      }
    }
    registerDeferredTurnRenderer(pi as unknown as ExtensionAPI)
    expect(registered.map(([type]) => type).sort()).toEqual(RENDERERS.map(([type]) => type).sort())
    const theme = { fg: (_tone: string, text: string) => text, bg: (_tone: string, text: string) => text }
    // The workflow turn card types draw the terminal card (the others: test/extension/step-cards.test.ts).
    for (const [, renderer] of registered.filter(([type]) =>
      (CARD_TYPES as ReadonlyArray<string>).includes(type)
    )) {
      const draw = renderer as (
        message: unknown,
        options: unknown,
        theme: unknown
      ) => { render: (w: number) => string[] }
      const restored = terminalMessage(run())
      const component = draw(restored, { expanded: false, outputPad: 1 }, theme)
      expect(component.render(80).join("\n")).toContain("Workflow ended")
    }
    expect(sends).toBe(0)
  })
})
