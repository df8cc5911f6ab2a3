/**
 * Drive the real Pi CLI in RPC mode as a child process, isolated in a temp sandbox
 * (pi-sandbox.ts, pi-command.ts) and pointed at the scripted mock model. One `PiRpc` is one process;
 * `restart()` starts a new process on the same session file (the crash-recovery path).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { type PiRpcOptions, piCommand } from "./pi-command.ts"
import {
  describe,
  isRecord,
  isResponse,
  type RpcCommand,
  type RpcRecord,
  type RpcResponse
} from "./rpc-records.ts"

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
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
    const { args, cwd, env } = piCommand(options)
    this.options = options
    this.knownSessionFile = options.sessionFile
    this.spawnedAt = performance.now()
    this.child = spawn(process.execPath, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] })
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
