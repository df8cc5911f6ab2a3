/**
 * Real interactive Pi in a tmux session (a real terminal): a sandbox with the workflow files, a
 * launcher script with the sandbox's environment and this checkout's extension, and the pane
 * read back until a condition holds. Tests skip when tmux is not installed (`hasTmux`).
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { extensionEntry } from "../extension/lab.ts"
import { type MockOpenAI, type MockOpenAIOptions, startMockOpenAI } from "./mock-openai.ts"
import { sandboxEnv } from "./pi-command.ts"
import { createPiSandbox, piCliPath } from "./pi-sandbox.ts"

export const hasTmux = spawnSync("tmux", ["-V"]).status === 0
export const tmux = (...args: ReadonlyArray<string>) => spawnSync("tmux", args, { encoding: "utf8" })
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export interface TuiPi {
  readonly mock: MockOpenAI
  readonly session: string
  /** The pane as text: the visible screen, or with `scrollback` lines above it too. */
  readonly capture: (scrollback?: number) => string
  /** Capture until `check` holds (at most `timeoutMs`); the last capture either way. */
  readonly until: (
    check: (pane: string) => boolean,
    options?: { readonly timeoutMs?: number; readonly scrollback?: number }
  ) => Promise<string>
  /** Type `text` into Pi's editor and press Enter. */
  readonly type: (text: string) => void
}

/**
 * Pi in its TUI over the scripted model, started in tmux and waited for; each piece is torn down
 * by a function pushed to `cleanups` (the caller runs them, newest first).
 */
export const startTuiPi = async (options: {
  readonly mock: MockOpenAIOptions
  readonly workflows: Readonly<Record<string, string>>
  readonly prefix: string
  readonly cleanups: Array<() => Promise<void> | void>
}): Promise<TuiPi> => {
  const mock = await startMockOpenAI(options.mock)
  options.cleanups.push(() => mock.close())
  const sandbox = createPiSandbox(mock.baseUrl, `${options.prefix}-`)
  options.cleanups.push(() => sandbox.remove())
  const workflows = join(sandbox.workDir, ".pi", "workflows")
  mkdirSync(workflows, { recursive: true })
  for (const [file, source] of Object.entries(options.workflows)) writeFileSync(join(workflows, file), source)
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
  const session = `${options.prefix}-${process.pid}`
  const started = tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "50", launcher)
  if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr}`)
  options.cleanups.push(() => {
    tmux("kill-session", "-t", session)
  })
  const capture = (scrollback?: number) =>
    tmux(
      "capture-pane",
      "-p",
      "-J",
      "-t",
      session,
      ...(scrollback === undefined ? [] : ["-S", `-${scrollback}`])
    ).stdout
  const until: TuiPi["until"] = async (check, { timeoutMs = 20_000, scrollback } = {}) => {
    const deadline = Date.now() + timeoutMs
    let pane = ""
    while (Date.now() < deadline) {
      pane = capture(scrollback)
      if (check(pane)) return pane
      await sleep(200)
    }
    return pane
  }
  const type = (text: string) => {
    tmux("send-keys", "-t", session, "-l", text)
    tmux("send-keys", "-t", session, "Enter")
  }
  await until((pane) => pane.includes("mock-model"))
  return { mock, session, capture, until, type }
}
