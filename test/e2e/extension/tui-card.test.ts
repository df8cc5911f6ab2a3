/**
 * The terminal turn's card in real interactive Pi: Pi runs in its TUI inside tmux (a real
 * terminal), the scripted model starts a workflow that fails, and the pane is captured once the
 * run's terminal turn (its fallback) arrived. The collapsed card shows workflow, state, run and
 * `restarts 0/3`, and none of the model-facing content (decision instructions, facts, the
 * restart call); the user's own final notification names the error. Then `/workflow` argument
 * completion: the subcommands with their descriptions, then the run IDs with workflow and state.
 * Skipped when tmux is not installed.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { startMockOpenAI } from "../harness/mock-openai.ts"
import { sandboxEnv } from "../harness/pi-command.ts"
import { createPiSandbox, piCliPath } from "../harness/pi-sandbox.ts"
import { extensionEntry } from "./lab.ts"
import { NIGHTLY_REPORT } from "./workflow-sources.ts"

const hasTmux = spawnSync("tmux", ["-V"]).status === 0
const tmux = (...args: ReadonlyArray<string>) => spawnSync("tmux", args, { encoding: "utf8" })
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Poll the pane until `check` holds; the last capture either way. */
const captureUntil = async (session: string, check: (pane: string) => boolean, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs
  let pane = ""
  while (Date.now() < deadline) {
    pane = tmux("capture-pane", "-p", "-J", "-t", session, "-S", "-300").stdout
    if (check(pane)) return pane
    await sleep(200)
  }
  return pane
}

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe.skipIf(!hasTmux)("the terminal turn card in interactive Pi (tmux capture)", () => {
  it("a failed run's fallback renders as the collapsed card: workflow, state, run, restarts", async () => {
    const mock = await startMockOpenAI({
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "nightly-report" } }] },
        { text: "The nightly report is running." },
        { text: "The metrics database is down; I stop here and tell the user." }
      ],
      defaultReply: { text: "ok" }
    })
    cleanups.push(() => mock.close())
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-tui-")
    cleanups.push(() => sandbox.remove())
    const workflows = join(sandbox.workDir, ".pi", "workflows")
    mkdirSync(workflows, { recursive: true })
    writeFileSync(join(workflows, "nightly-report.workflow.mjs"), NIGHTLY_REPORT)
    const env = sandboxEnv(sandbox, {
      TERM: "xterm-256color",
      PI_WORKFLOWS_DB: join(sandbox.root, "controller.db")
    })
    const launcher = join(sandbox.root, "pi.sh")
    const quote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`
    writeFileSync(
      launcher,
      [
        "#!/bin/sh",
        ...Object.entries(env).map(([key, value]) => `export ${key}=${quote(value)}`),
        `cd ${quote(sandbox.workDir)}`,
        `exec ${quote(process.execPath)} ${quote(piCliPath())} --provider mock --model mock-model ` +
          `--session-dir ${quote(sandbox.sessionDir)} --no-extensions -e ${quote(extensionEntry())} ` +
          "--no-skills --no-prompt-templates --no-context-files --offline"
      ].join("\n"),
      { mode: 0o755 }
    )
    const session = `pwt-card-${process.pid}`
    const started = tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "50", launcher)
    expect(started.status).toBe(0)
    cleanups.push(() => {
      tmux("kill-session", "-t", session)
    })
    await captureUntil(session, (pane) => pane.includes("mock-model"))
    tmux("send-keys", "-t", session, "-l", "Run the nightly report.")
    tmux("send-keys", "-t", session, "Enter")
    const pane = await captureUntil(session, (p) => p.includes("restarts 0/3") && p.includes("I stop here"))
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
    const menu = await captureUntil(session, (p) => p.includes("a run's state and steps"))
    expect(menu).toContain("a run's state and steps")
    expect(menu).toContain("start a workflow")
    tmux("send-keys", "-t", session, "Tab")
    const applied = await captureUntil(session, (p) => /\/workflow status\s*$/m.test(p))
    tmux("send-keys", "-t", session, "-l", runId.slice(0, 4))
    // The menu offers the run (its ID, cut to the menu's width) with its workflow and state.
    const item = new RegExp(`→ ${runId.slice(0, 24)}\\S*\\s+nightly-report · failed`)
    const ids = await captureUntil(session, (p) => item.test(p))
    expect(ids).toMatch(item)
    expect(applied).toMatch(/\/workflow status\s*$/m)
    // The status output stays above the editor (a widget, not a notice the next one replaces),
    // and the next /workflow command closes it.
    tmux("send-keys", "-t", session, "C-u")
    tmux("send-keys", "-t", session, "-l", `/workflow status ${runId}`)
    // The first Enter may take the completion menu's item (the same ID); the second submits.
    await captureUntil(session, (p) => p.includes(`/workflow status ${runId}`))
    tmux("send-keys", "-t", session, "Enter")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    const status = await captureUntil(session, (p) => p.includes("/workflow status refreshes this"))
    expect(status).toContain(`Run ${runId} of nightly-report`)
    tmux("send-keys", "-t", session, "-l", "/workflow list")
    tmux("send-keys", "-t", session, "Enter")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    // The visible screen (no scrollback): the panel is gone.
    const screen = () => tmux("capture-pane", "-p", "-J", "-t", session).stdout
    const deadline = Date.now() + 20_000
    while (screen().includes("/workflow status refreshes this") && Date.now() < deadline) await sleep(200)
    expect(screen()).not.toContain("/workflow status refreshes this")
  }, 60_000)
})
