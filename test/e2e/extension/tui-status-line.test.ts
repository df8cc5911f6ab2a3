/**
 * The live status line in real interactive Pi: Pi runs in its TUI inside tmux, the scripted
 * model starts a workflow whose agent step (limit 8 h) it answers in plain text, and both step
 * reminders too, so the step stays in flight. The footer then shows one line with the workflow,
 * node, elapsed time and time left to the step's limit, redrawn as time passes; `/workflow
 * cancel` ends the run and the line is gone. Skipped when tmux is not installed.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { contentText, startMockOpenAI } from "../harness/mock-openai.ts"
import { sandboxEnv } from "../harness/pi-command.ts"
import { createPiSandbox, piCliPath } from "../harness/pi-sandbox.ts"
import { extensionEntry } from "./lab.ts"
import { SLOW } from "./workflow-sources.ts"

const hasTmux = spawnSync("tmux", ["-V"]).status === 0
const tmux = (...args: ReadonlyArray<string>) => spawnSync("tmux", args, { encoding: "utf8" })
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The visible screen (no scrollback) until `check` holds; the last capture either way. */
const screenUntil = async (session: string, check: (screen: string) => boolean, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs
  let screen = ""
  while (Date.now() < deadline) {
    screen = tmux("capture-pane", "-p", "-J", "-t", session).stdout
    if (check(screen)) return screen
    await sleep(200)
  }
  return screen
}

const LINE = /workflow slow · ask · (\d+)s elapsed · (7h 59m|8h) left/

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe.skipIf(!hasTmux)("the live status line in interactive Pi (tmux capture)", () => {
  it("appears while the run's step is in flight, counts, and is cleared when the run ends", async () => {
    const mock = await startMockOpenAI({
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "slow" } }] },
        { text: "The slow workflow is running." },
        { text: "I will answer the step later." },
        // The step's two reminders, each answered in plain text too; then the user's notice.
        { text: "Still later, reminder one." },
        { text: "Still later, reminder two." }
      ],
      defaultReply: { text: "ok" }
    })
    cleanups.push(() => mock.close())
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-tui-line-")
    cleanups.push(() => sandbox.remove())
    const workflows = join(sandbox.workDir, ".pi", "workflows")
    mkdirSync(workflows, { recursive: true })
    writeFileSync(join(workflows, "slow.workflow.mjs"), SLOW)
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
    const session = `pwt-line-${process.pid}`
    expect(tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "50", launcher).status).toBe(0)
    cleanups.push(() => {
      tmux("kill-session", "-t", session)
    })
    await screenUntil(session, (screen) => screen.includes("mock-model"))
    // No run yet: no line.
    expect(tmux("capture-pane", "-p", "-J", "-t", session).stdout).not.toMatch(LINE)
    tmux("send-keys", "-t", session, "-l", "Run the slow workflow.")
    tmux("send-keys", "-t", session, "Enter")
    const first = await screenUntil(
      session,
      (screen) =>
        LINE.test(screen) && screen.includes("reminder two") && screen.includes("reminders went unanswered")
    )
    expect(first).toMatch(LINE)
    // Redrawn from memory as time passes: the elapsed time grows.
    const seconds = (screen: string) => Number(LINE.exec(screen)?.[1] ?? "-1")
    const later = await screenUntil(session, (screen) => seconds(screen) >= seconds(first) + 2)
    expect(seconds(later)).toBeGreaterThanOrEqual(seconds(first) + 2)
    // Still the step in flight after its reminders, and the line says so (from its next reread,
    // at most `statusLineRefresh` later: a reminder is no run write).
    const WAITING = new RegExp(`${LINE.source} · waiting for agent \\(reminder 2 of 2\\)`)
    expect(await screenUntil(session, (screen) => WAITING.test(screen))).toMatch(WAITING)
    // The run ends: the line is cleared.
    tmux("send-keys", "-t", session, "-l", "/workflow cancel")
    tmux("send-keys", "-t", session, "Enter")
    await sleep(300)
    tmux("send-keys", "-t", session, "Enter")
    const ended = await screenUntil(session, (screen) => !/workflow slow · ask/.test(screen))
    expect(ended).not.toMatch(/workflow slow · ask/)
    // The prompt, the start's result, the step, and its two reminders: nothing after the notice
    // or the cancel.
    expect(mock.requestCount()).toBe(5)
    const newest = mock.requests().map((request) => contentText(request.messages.at(-1)?.content))
    expect(newest[2]).toContain('waiting for step "ask"')
    expect(newest.slice(3).map((text) => text.split(":")[0])).toEqual(["Reminder 1 of 2", "Reminder 2 of 2"])
  }, 60_000)
})
