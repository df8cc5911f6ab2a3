/**
 * The live status line in real interactive Pi: Pi runs in its TUI inside tmux, the scripted
 * model starts a workflow whose agent step (limit 8 h) it answers in plain text, and both step
 * reminders too, so the step stays in flight. The footer then shows one line with the workflow,
 * node, elapsed time and time left to the step's limit, redrawn as time passes; `/workflow
 * cancel` ends the run and the line is gone. Skipped when tmux is not installed.
 */
import { afterEach, describe, expect, it } from "vitest"
import { contentText } from "../harness/mock-openai.ts"
import { hasTmux, sleep, startTuiPi, tmux } from "../harness/tui.ts"
import { SLOW } from "./workflow-sources.ts"

const LINE = /workflow slow · ask · (\d+)s elapsed · (7h 59m|8h) left/

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe.skipIf(!hasTmux)("the live status line in interactive Pi (tmux capture)", () => {
  it("appears while the run's step is in flight, counts, and is cleared when the run ends", async () => {
    const tui = await startTuiPi({
      mock: {
        script: [
          { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "slow" } }] },
          { text: "The slow workflow is running." },
          { text: "I will answer the step later." },
          // The step's two reminders, each answered in plain text too; then the user's notice.
          { text: "Still later, reminder one." },
          { text: "Still later, reminder two." }
        ],
        defaultReply: { text: "ok" }
      },
      workflows: { "slow.workflow.mjs": SLOW },
      prefix: "pwt-line",
      cleanups
    })
    const { mock, session } = tui
    // No run yet: no line.
    expect(tui.capture()).not.toMatch(LINE)
    tui.type("Run the slow workflow.")
    const first = await tui.until(
      (screen) =>
        LINE.test(screen) && screen.includes("reminder two") && screen.includes("reminders went unanswered")
    )
    expect(first).toMatch(LINE)
    // Redrawn from memory as time passes: the elapsed time grows.
    const seconds = (screen: string) => Number(LINE.exec(screen)?.[1] ?? "-1")
    const later = await tui.until((screen) => seconds(screen) >= seconds(first) + 2)
    expect(seconds(later)).toBeGreaterThanOrEqual(seconds(first) + 2)
    // Still the step in flight after its reminders, and the line says so (from its next reread,
    // at most `statusLineRefresh` later: a reminder is no run write).
    const WAITING = new RegExp(`${LINE.source} · waiting for agent \\(reminder 2 of 2\\)`)
    expect(await tui.until((screen) => WAITING.test(screen))).toMatch(WAITING)
    // The run ends: the line is cleared.
    tui.type("/workflow cancel")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    const ended = await tui.until((screen) => !/workflow slow · ask/.test(screen))
    expect(ended).not.toMatch(/workflow slow · ask/)
    // The prompt, the start's result, the step, and its two reminders: nothing after the notice
    // or the cancel.
    expect(mock.requestCount()).toBe(5)
    const newest = mock.requests().map((request) => contentText(request.messages.at(-1)?.content))
    expect(newest[2]).toContain('waiting for step "ask"')
    expect(newest.slice(3).map((text) => text.split(":")[0])).toEqual(["Reminder 1 of 2", "Reminder 2 of 2"])
  }, 60_000)
})
