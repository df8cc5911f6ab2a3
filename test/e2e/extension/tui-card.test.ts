/**
 * The terminal turn's card in real interactive Pi: Pi runs in its TUI inside tmux (a real
 * terminal), the scripted model starts a workflow that fails, and the pane is captured once the
 * run's terminal turn (its fallback) arrived. The collapsed card shows workflow, state, run and
 * `restarts 0/3`, and none of the model-facing content (decision instructions, facts, the
 * restart call); the user's own final notification names the error. Then `/workflow` argument
 * completion: the subcommands with their descriptions, then the run IDs with workflow and state.
 * Skipped when tmux is not installed.
 */
import { afterEach, describe, expect, it } from "vitest"
import { hasTmux, sleep, startTuiPi, tmux } from "../harness/tui.ts"
import { NIGHTLY_REPORT } from "./workflow-sources.ts"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe.skipIf(!hasTmux)("the terminal turn card in interactive Pi (tmux capture)", () => {
  it("a failed run's fallback renders as the collapsed card: workflow, state, run, restarts", async () => {
    const tui = await startTuiPi({
      mock: {
        script: [
          { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "nightly-report" } }] },
          { text: "The nightly report is running." },
          { text: "The metrics database is down; I stop here and tell the user." }
        ],
        defaultReply: { text: "ok" }
      },
      workflows: { "nightly-report.workflow.mjs": NIGHTLY_REPORT },
      prefix: "pwt-card",
      cleanups
    })
    const { mock, session } = tui
    // The card may have scrolled above the screen: read the scrollback too.
    const captureUntil = (check: (pane: string) => boolean) => tui.until(check, { scrollback: 300 })
    tui.type("Run the nightly report.")
    const pane = await captureUntil((p) => p.includes("restarts 0/3") && p.includes("I stop here"))
    expect(pane).toMatch(/Workflow ended · nightly-report · failed/)
    // Every message the extension sends has a renderer: no raw type name, the final notice is one line.
    expect(pane).not.toContain("[pi-workflows-")
    expect(pane).toMatch(/■ Workflow nightly-report \(run \S+\) failed after 1 step/)
    expect(pane).toMatch(/run \S+-nightly-report-\S+ · restarts 0\/3/)
    // Collapsed: the model-facing content stays out of the terminal.
    expect(pane).not.toContain("does not show that the user's task is done")
    expect(pane).not.toContain("Workflow turn notice from Pi Workflows.")
    expect(pane).not.toContain("Observed facts:")
    expect(pane).not.toContain('"action": "restart"')
    // …while the model got all of it in the fallback's prompt.
    expect(mock.requestsMentioning("does not show that the user's task is done")).toHaveLength(1)
    // `/workflow` completes its subcommands, then the project's run IDs (not file names).
    const runId = /run (\S+-nightly-report-\S+) · restarts/.exec(pane)?.[1] ?? "?"
    tmux("send-keys", "-t", session, "-l", "/workflow sta")
    const menu = await captureUntil((p) => p.includes("a run's state and steps"))
    expect(menu).toContain("a run's state and steps")
    expect(menu).toContain("start a workflow")
    tmux("send-keys", "-t", session, "Tab")
    const applied = await captureUntil((p) => /\/workflow status\s*$/m.test(p))
    tmux("send-keys", "-t", session, "-l", runId.slice(0, 4))
    // The menu offers the run (its ID, cut to the menu's width) with its workflow and state.
    const item = new RegExp(`→ ${runId.slice(0, 24)}\\S*\\s+nightly-report · failed`)
    const ids = await captureUntil((p) => item.test(p))
    expect(ids).toMatch(item)
    expect(applied).toMatch(/\/workflow status\s*$/m)
    // The status output stays above the editor (a widget, not a notice the next one replaces),
    // and the next /workflow command closes it.
    tmux("send-keys", "-t", session, "C-u")
    tmux("send-keys", "-t", session, "-l", `/workflow status ${runId}`)
    // The first Enter may take the completion menu's item (the same ID); the second submits.
    await captureUntil((p) => p.includes(`/workflow status ${runId}`))
    tmux("send-keys", "-t", session, "Enter")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    const status = await captureUntil((p) => p.includes("/workflow status refreshes this"))
    expect(status).toContain(`Run ${runId} of nightly-report`)
    tui.type("/workflow list")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    // The visible screen (no scrollback): the panel is gone.
    const screen = () => tui.capture()
    const deadline = Date.now() + 20_000
    while (screen().includes("/workflow status refreshes this") && Date.now() < deadline) await sleep(200)
    expect(screen()).not.toContain("/workflow status refreshes this")
  }, 60_000)
})
