/**
 * Drive the real Pi CLI in RPC mode as a child process, isolated in a temp sandbox and pointed at
 * the scripted mock model. One `PiRpc` is one process; `restart()` starts a new process on the
 * same session file (the crash-recovery path).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, isAbsolute, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"

/** One JSON record Pi wrote to stdout: an event, a `response`, or an extension UI request. */
export type RpcRecord = { readonly type: string } & Readonly<Record<string, unknown>>

export interface RpcResponse extends RpcRecord {
  readonly type: "response"
  readonly command: string
  readonly success: boolean
  readonly id?: string
  readonly data?: unknown
  readonly error?: string
}

/** A command sent on stdin; `id` is filled in when missing. */
export type RpcCommand = { readonly type: string; readonly id?: string } & Readonly<Record<string, unknown>>

/** Temp directories that keep Pi away from the real home and configuration. */
export interface PiSandbox {
  readonly root: string
  readonly agentDir: string
  readonly homeDir: string
  readonly sessionDir: string
  /** Pi's working directory. */
  readonly workDir: string
  remove(): void
}

export interface PiRpcOptions {
  readonly sandbox: PiSandbox
  /** Absolute path of the extension to load with `-e`, or null for none. */
  readonly extensionPath: string | null
  /**
   * Let Pi discover extensions (packages recorded in the sandbox's agent settings, e.g. by
   * `pi install`) instead of passing `--no-extensions`. Off by default.
   */
  readonly discoverExtensions?: boolean
  /** Extra environment, e.g. `PI_WORKFLOWS_DB`. */
  readonly env?: Readonly<Record<string, string>>
  /** Resume this session file (`--session`). */
  readonly sessionFile?: string
  readonly extraArgs?: ReadonlyArray<string>
  /** Default for every wait. 10 s. */
  readonly timeoutMs?: number
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

const PI_PACKAGE = "@earendil-works/pi-coding-agent"

/**
 * The installed Pi package's directory. Its exports are import-only, so `require.resolve` cannot
 * find it; `import.meta.resolve` can, but vitest 3's module runner does not provide it, so fall
 * back to Node's node_modules lookup from this file upwards.
 */
const piPackageDir = (): string => {
  if (typeof import.meta.resolve === "function") {
    // dist/index.js → package root
    return dirname(dirname(fileURLToPath(import.meta.resolve(PI_PACKAGE))))
  }
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, "node_modules", PI_PACKAGE)
    if (existsSync(join(candidate, "package.json"))) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`pi-rpc: ${PI_PACKAGE} is not installed above ${import.meta.url}`)
    dir = parent
  }
}

const PackageBin = Schema.Struct({ bin: Schema.Struct({ pi: Schema.String }) })

/** The Pi CLI named by the package's `bin.pi` (1.6: `dist/bundle/cli.js`). */
export const piCliPath = (): string => {
  const dir = piPackageDir()
  const { bin } = Schema.decodeUnknownSync(Schema.parseJson(PackageBin))(
    readFileSync(join(dir, "package.json"), "utf8")
  )
  const cli = join(dir, bin.pi)
  if (!existsSync(cli)) throw new Error(`pi-rpc: Pi CLI not found at ${cli}`)
  return cli
}

const assertNodeVersion = () => {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
  if (major < 22 || (major === 22 && minor < 19)) {
    throw new Error(
      `pi-rpc: Pi needs Node >= 22.19 but tests run on ${process.versions.node}; ` +
        `run them after: eval "$(bash scripts/node22-env.sh)"`
    )
  }
}

/** Create the sandbox and a models.json whose only provider `mock` serves `mock-model` from `baseUrl`. */
export const createPiSandbox = (mockBaseUrl: string, prefix = "pwt-pi-"): PiSandbox => {
  const root = mkdtempSync(join(tmpdir(), prefix))
  const agentDir = join(root, "agent")
  const homeDir = join(root, "home")
  const sessionDir = join(root, "sessions")
  const workDir = join(root, "work")
  for (const dir of [agentDir, homeDir, sessionDir, workDir]) mkdirSync(dir, { recursive: true })
  const models = {
    providers: {
      mock: {
        baseUrl: mockBaseUrl,
        api: "openai-completions",
        apiKey: "mock-key",
        models: [{ id: "mock-model", contextWindow: 128000, maxTokens: 4096 }]
      }
    }
  }
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(models, null, 2))
  return {
    root,
    agentDir,
    homeDir,
    sessionDir,
    workDir,
    remove: () => rmSync(root, { recursive: true, force: true })
  }
}

const isRecord = (value: unknown): value is RpcRecord =>
  typeof value === "object" && value !== null && "type" in value && typeof value.type === "string"

const isResponse = (record: RpcRecord): record is RpcResponse =>
  record.type === "response" && typeof record.success === "boolean" && typeof record.command === "string"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Short one-line picture of an event for error messages. */
const describe = (record: RpcRecord): string => {
  switch (record.type) {
    case "response":
      return `response(${String(record.command)}${record.success === false ? ` FAILED: ${String(record.error)}` : ""})`
    case "agent_settled":
      return `agent_settled(aborted=${String(record.aborted)})`
    case "extension_error":
      return `extension_error(${String(record.event)}: ${String(record.error)})`
    case "message_update":
      return "message_update"
    default:
      return record.type
  }
}

interface Waiter {
  /** Re-evaluated on every record and on exit; true when done. */
  readonly poll: () => boolean
}

export class PiRpc {
  readonly options: PiRpcOptions
  readonly child: ChildProcessWithoutNullStreams
  readonly spawnedAt: number
  private readonly log: Array<RpcRecord> = []
  private readonly waiters = new Set<Waiter>()
  private stderrText = ""
  private stdoutBuffer = ""
  private exitInfo: ExitInfo | undefined
  private nextId = 0
  private knownSessionFile: string | undefined

  /** Spawn Pi; call `start()` before using it. */
  constructor(options: PiRpcOptions) {
    assertNodeVersion()
    if (options.extensionPath !== null && !isAbsolute(options.extensionPath)) {
      throw new Error(`pi-rpc: extensionPath must be absolute, got ${options.extensionPath}`)
    }
    this.options = options
    this.knownSessionFile = options.sessionFile
    const { sandbox } = options
    const args = [
      piCliPath(),
      "--mode",
      "rpc",
      "--provider",
      "mock",
      "--model",
      "mock-model",
      "--session-dir",
      sandbox.sessionDir,
      ...(options.discoverExtensions === true ? [] : ["--no-extensions"]),
      ...(options.extensionPath === null ? [] : ["-e", options.extensionPath]),
      "--no-skills",
      "--no-prompt-templates",
      "--no-context-files",
      "--offline",
      ...(options.sessionFile === undefined ? [] : ["--session", options.sessionFile]),
      ...(options.extraArgs ?? [])
    ]
    this.spawnedAt = performance.now()
    this.child = spawn(process.execPath, args, {
      cwd: sandbox.workDir,
      env: {
        PATH: process.env.PATH ?? "",
        PI_CODING_AGENT_DIR: sandbox.agentDir,
        PI_OFFLINE: "1",
        PI_SKIP_VERSION_CHECK: "1",
        PI_TELEMETRY: "0",
        HOME: sandbox.homeDir,
        ...options.env
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    this.child.stdout.setEncoding("utf8")
    this.child.stderr.setEncoding("utf8")
    this.child.stdout.on("data", (chunk: string) => this.onStdout(chunk))
    this.child.stderr.on("data", (chunk: string) => {
      this.stderrText += chunk
    })
    // Writing to a dead child must surface as the exit, not as an unhandled stream error.
    this.child.stdin.on("error", () => {})
    this.child.on("exit", (code, signal) => {
      this.exitInfo = { code, signal }
      this.wake()
    })
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** The session file reported by `get_state` (or given to resume). */
  get sessionFile(): string | undefined {
    return this.knownSessionFile
  }

  get exited(): ExitInfo | undefined {
    return this.exitInfo
  }

  /** Every stdout record so far, in order. An index into it is a cursor (see `mark`). */
  events(): ReadonlyArray<RpcRecord> {
    return [...this.log]
  }

  /** The current end of the event log; pass it as `after` to look only at what comes next. */
  mark(): number {
    return this.log.length
  }

  stderr(): string {
    return this.stderrText
  }

  /** Wait until Pi answers `get_state`; returns the session file path. */
  async start(timeoutMs = this.options.timeoutMs ?? 10_000): Promise<string> {
    const state = await this.sendOk({ type: "get_state" }, timeoutMs)
    const data = state.data
    const file =
      typeof data === "object" &&
      data !== null &&
      "sessionFile" in data &&
      typeof data.sessionFile === "string"
        ? data.sessionFile
        : undefined
    if (file === undefined) throw this.failure("get_state answered without a sessionFile")
    this.knownSessionFile = file
    return file
  }

  /** Send one command and resolve with its `response` (also when `success` is false). */
  send(command: RpcCommand, timeoutMs = this.options.timeoutMs ?? 10_000): Promise<RpcResponse> {
    const id = command.id ?? `h${++this.nextId}`
    const from = this.log.length
    if (this.exitInfo !== undefined) return Promise.reject(this.failure(`cannot send ${command.type}`))
    this.child.stdin.write(`${JSON.stringify({ ...command, id })}\n`)
    return this.waitUntil(
      () => {
        for (let i = from; i < this.log.length; i++) {
          const record = this.log[i]
          if (record !== undefined && isResponse(record) && record.id === id) return record
        }
        return undefined
      },
      timeoutMs,
      `response to ${command.type} (id ${id})`
    )
  }

  /** Like `send`, but a `success: false` answer is an error with context. */
  async sendOk(command: RpcCommand, timeoutMs?: number): Promise<RpcResponse> {
    const response = await this.send(command, timeoutMs)
    if (!response.success)
      throw this.failure(`${command.type} failed: ${response.error ?? "(no error text)"}`)
    return response
  }

  /**
   * Write one raw record that gets no `response`, e.g. an `extension_ui_response`
   * `{type:"extension_ui_response", id, value | confirmed | cancelled}` answering a dialog.
   */
  write(record: RpcCommand): void {
    if (this.exitInfo !== undefined) throw this.failure(`cannot write ${record.type}`)
    this.child.stdin.write(`${JSON.stringify(record)}\n`)
  }

  /** Send a user prompt (also `/command` text); resolves with the response, not the run's end. */
  prompt(message: string, extra: Readonly<Record<string, unknown>> = {}): Promise<RpcResponse> {
    return this.send({ type: "prompt", message, ...extra })
  }

  /** The user's Escape: aborts the current run; Pi answers once the session is idle. */
  abortLikeEscape(): Promise<RpcResponse> {
    return this.send({ type: "abort" })
  }

  /** The first record at index >= `after` (default 0) matching `predicate`, waiting for it if needed. */
  waitFor(
    predicate: (record: RpcRecord) => boolean,
    options: { readonly after?: number; readonly timeoutMs?: number; readonly label?: string } = {}
  ): Promise<RpcRecord> {
    const after = options.after ?? 0
    return this.waitUntil(
      () => this.log.slice(after).find(predicate),
      options.timeoutMs ?? this.options.timeoutMs ?? 10_000,
      options.label ?? "a matching event"
    )
  }

  /** Records of `type` at index >= `after`. */
  eventsOfType(type: string, after = 0): ReadonlyArray<RpcRecord> {
    return this.log.slice(after).filter((record) => record.type === type)
  }

  /**
   * The `nth` (1-based, default 1) `agent_settled` at index >= `after`. The first settle after a
   * point may be an aborted one; ask for the one you mean, or use `waitForQuiet`.
   */
  waitForSettled(
    options: { readonly nth?: number; readonly after?: number; readonly timeoutMs?: number } = {}
  ): Promise<RpcRecord> {
    const nth = options.nth ?? 1
    const after = options.after ?? 0
    return this.waitUntil(
      () => this.eventsOfType("agent_settled", after)[nth - 1],
      options.timeoutMs ?? this.options.timeoutMs ?? 10_000,
      `agent_settled #${nth} after event ${after}`
    )
  }

  /**
   * Wait for Pi to be quiet: every `agent_start` since `after` is settled, no new `agent_start`
   * for `quietMs`, and `get_state` reports no streaming and nothing queued. Work requested from
   * an `agent_settled` handler starts just after that event, so a bare settle is not the end.
   * With `requireSettle` (default true) at least one settle after `after` is required.
   */
  async waitForQuiet(
    options: {
      readonly after?: number
      readonly quietMs?: number
      readonly timeoutMs?: number
      readonly requireSettle?: boolean
    } = {}
  ): Promise<void> {
    const after = options.after ?? 0
    const quietMs = options.quietMs ?? 150
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? 10_000
    const requireSettle = options.requireSettle ?? true
    const deadline = performance.now() + timeoutMs
    const settledSinceAfter = () => {
      let open = 0
      let settles = 0
      for (const record of this.log.slice(after)) {
        if (record.type === "agent_start") open++
        if (record.type === "agent_settled") {
          settles++
          open = 0
        }
      }
      return open === 0 && (!requireSettle || settles > 0)
    }
    const what = `quiet (every run settled, none started for ${quietMs} ms) within ${timeoutMs} ms`
    for (;;) {
      const remaining = deadline - performance.now()
      if (remaining <= quietMs) throw this.failure(`timed out waiting for ${what}`)
      await this.waitUntil(
        () => (settledSinceAfter() ? true : undefined),
        remaining,
        `runs to settle, for ${what}`
      )
      const before = this.log.length
      await sleep(quietMs)
      // get_state answers promptly even mid-run; give it its own budget.
      const state = await this.sendOk({ type: "get_state" }, 5_000)
      const started = this.log.slice(before).some((record) => record.type === "agent_start")
      const data = state.data
      const busy =
        typeof data === "object" &&
        data !== null &&
        (("isStreaming" in data && data.isStreaming === true) ||
          ("pendingMessageCount" in data &&
            typeof data.pendingMessageCount === "number" &&
            data.pendingMessageCount > 0))
      if (!started && !busy && settledSinceAfter()) return
    }
  }

  /** Close stdin (orderly shutdown) and wait for exit; SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 5_000): Promise<ExitInfo> {
    if (this.exitInfo !== undefined) return this.exitInfo
    this.child.stdin.end()
    try {
      return await this.waitForExit(timeoutMs)
    } catch (error) {
      this.child.kill("SIGKILL")
      await this.waitForExit(5_000)
      throw error
    }
  }

  /** SIGKILL (a crash: no shutdown handlers run) and wait for the exit. */
  async kill(): Promise<ExitInfo> {
    if (this.exitInfo !== undefined) return this.exitInfo
    this.child.kill("SIGKILL")
    return this.waitForExit(5_000)
  }

  /**
   * Start a new Pi process on this one's session file (`--session`), with the same sandbox,
   * extension and env unless overridden. Stop or kill this one first.
   */
  async restart(overrides: Partial<Omit<PiRpcOptions, "sandbox">> = {}): Promise<PiRpc> {
    if (this.exitInfo === undefined) throw this.failure("restart() while the previous Pi is still running")
    const sessionFile = overrides.sessionFile ?? this.knownSessionFile
    if (sessionFile === undefined) throw this.failure("restart() without a known session file")
    const next = new PiRpc({ ...this.options, ...overrides, sessionFile })
    await next.start()
    return next
  }

  /** Kill the process if it is still running (for `afterEach`). */
  async dispose(): Promise<void> {
    if (this.exitInfo === undefined) await this.kill()
  }

  /** An Error naming what was awaited, with recent events, exit status and the stderr tail. */
  failure(what: string): Error {
    const recent = this.log.slice(-25).map(describe).join(", ")
    const exit =
      this.exitInfo === undefined
        ? "running"
        : `exited code=${String(this.exitInfo.code)} signal=${String(this.exitInfo.signal)}`
    const stderrTail = this.stderrText.slice(-2_000).trim()
    return new Error(
      `pi-rpc (pid ${String(this.child.pid)}, ${exit}): ${what}\n` +
        `  last ${Math.min(25, this.log.length)} of ${this.log.length} events: ${recent || "(none)"}\n` +
        `  stderr tail: ${stderrTail || "(empty)"}`
    )
  }

  private waitForExit(timeoutMs: number): Promise<ExitInfo> {
    return this.waitUntil(() => this.exitInfo, timeoutMs, "process exit", true)
  }

  /** Resolve with `check()`'s first defined value; reject on timeout or (unless awaiting it) exit. */
  private waitUntil<T>(
    check: () => T | undefined,
    timeoutMs: number,
    what: string,
    exitIsOk = false
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer)
        this.waiters.delete(waiter)
      }
      const waiter: Waiter = {
        poll: () => {
          const value = check()
          if (value !== undefined) {
            done()
            resolve(value)
            return true
          }
          if (this.exitInfo !== undefined && !exitIsOk) {
            done()
            reject(this.failure(`Pi exited while waiting for ${what}`))
            return true
          }
          return false
        }
      }
      const timer = setTimeout(() => {
        this.waiters.delete(waiter)
        reject(this.failure(`timed out after ${Math.round(timeoutMs)} ms waiting for ${what}`))
      }, timeoutMs)
      this.waiters.add(waiter)
      waiter.poll()
    })
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter.poll()
  }

  /** RPC framing is LF-delimited JSON; split only on "\n" (never on U+2028/2029). */
  private onStdout(chunk: string): void {
    this.stdoutBuffer += chunk
    let newline = this.stdoutBuffer.indexOf("\n")
    while (newline >= 0) {
      const line = this.stdoutBuffer.slice(0, newline).replace(/\r$/, "")
      this.stdoutBuffer = this.stdoutBuffer.slice(newline + 1)
      if (line.trim() !== "") this.record(line)
      newline = this.stdoutBuffer.indexOf("\n")
    }
  }

  private record(line: string): void {
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      this.stderrText += `[pi-rpc] non-JSON stdout line: ${line}\n`
      return
    }
    if (!isRecord(parsed)) {
      this.stderrText += `[pi-rpc] stdout record without a type: ${line}\n`
      return
    }
    this.log.push(parsed)
    this.wake()
  }
}

/** Spawn Pi and wait until it is ready. */
export const startPi = async (options: PiRpcOptions): Promise<PiRpc> => {
  const pi = new PiRpc(options)
  try {
    await pi.start()
  } catch (error) {
    await pi.dispose()
    throw error
  }
  return pi
}
