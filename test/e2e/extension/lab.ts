/**
 * One real-Pi "lab" for an extension scenario: a scripted mock model, a sandbox with the
 * project's workflow files, the controller database in the sandbox, and Pi started in RPC mode
 * with the entry `package.json` names in `pi.extensions`. It also turns what happened into an
 * `Observation` (observation.ts): the model requests (what triggered each one, what the script answered), the
 * custom messages in the session file, the turn-intent rows and the run rows.
 *
 * No vitest here: `npm run demo` (scripts/demo.ts) plays the same scenarios under plain Node.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import {
  type ChatMessage,
  type ChatRequest,
  contentText,
  type MockOpenAI,
  type ScriptStep,
  startMockOpenAI
} from "../harness/mock-openai.ts"
import { type PiRpc, startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../harness/pi-sandbox.ts"
import { customContentText, customMessages } from "../harness/session-file.ts"
import { peekRows, peekTables, peekTurnIntents } from "../harness/sqlite-peek.ts"
import {
  describeReply,
  firstLine,
  intentLife,
  type IntentLife,
  type MessageView,
  type Observation,
  type RequestView,
  type RunView,
  runView,
  toolResultOf
} from "./observation.ts"

export const STEP = "pi-workflows-agent-step"
export const PRESENTATION = "pi-workflows-presentation"
export const FALLBACK = "pi-workflows-deferred-turn"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")

/** The extension entry exactly as `pi.extensions` names it (built by `npm run build`). */
export const extensionEntry = (): string => {
  const pkg: unknown = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  const entries =
    typeof pkg === "object" && pkg !== null && "pi" in pkg && typeof pkg.pi === "object" && pkg.pi !== null
      ? "extensions" in pkg.pi && Array.isArray(pkg.pi.extensions)
        ? pkg.pi.extensions
        : []
      : []
  const first: unknown = entries[0]
  if (typeof first !== "string") throw new Error("package.json has no pi.extensions entry")
  return join(ROOT, first)
}

/** Text of a chat message, whatever its content shape. */
export const messageText = (message: ChatMessage | undefined): string => contentText(message?.content)

/** The requestId an agent-step message asks the model to answer. */
export const requestIdIn = (text: string): string => {
  // Tolerates the text being JSON-escaped (a content array stringified by a caller).
  const match = /requestId[^A-Za-z0-9]+([A-Za-z0-9:_-]{6,})/.exec(text)
  if (match?.[1] === undefined) throw new Error(`no requestId in: ${text.slice(0, 300)}`)
  return match[1]
}

/** The requestId of the newest message the model got (the step prompt that started this turn). */
export const requestIdOf = (request: ChatRequest): string => requestIdIn(messageText(request.messages.at(-1)))

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

export interface LabOptions {
  /** File name → source of `.pi/workflows/*.workflow.mjs` files. */
  readonly workflows?: Readonly<Record<string, string>>
  readonly script?: ReadonlyArray<ScriptStep>
  /**
   * Where Pi gets the extension. Default: `-e` on the entry `pi.extensions` names in this
   * checkout. `installed`: no `-e`; `install` puts the package into the sandbox's agent directory
   * (e.g. with `pi install`) before Pi starts, and Pi discovers it there.
   */
  readonly extension?: {
    readonly installed: true
    readonly install: (sandbox: PiSandbox) => Promise<void> | void
  }
}

export class Lab {
  readonly mock: MockOpenAI
  readonly sandbox: PiSandbox
  readonly dbPath: string
  /** Every Pi process of this lab, oldest first; the last one is current. */
  private readonly processes: Array<PiRpc> = []
  /** How the script answered each request (by request index). */
  private readonly replies: Array<string>

  private constructor(mock: MockOpenAI, sandbox: PiSandbox, replies: Array<string>) {
    this.mock = mock
    this.sandbox = sandbox
    this.dbPath = join(sandbox.root, "controller.db")
    this.replies = replies
  }

  static async open(options: LabOptions = {}): Promise<Lab> {
    const replies: Array<string> = []
    // Record how each scripted step answered, for the transcript.
    const script = (options.script ?? []).map(
      (step): ScriptStep =>
        (request) => {
          const reply = typeof step === "function" ? step(request) : step
          replies[request.index] = describeReply(reply)
          return reply
        }
    )
    const mock = await startMockOpenAI({ script })
    let sandbox: PiSandbox | undefined
    try {
      sandbox = createPiSandbox(mock.baseUrl, "pwt-ext-")
      const dir = join(sandbox.workDir, ".pi", "workflows")
      mkdirSync(dir, { recursive: true })
      for (const [name, source] of Object.entries(options.workflows ?? {})) {
        writeFileSync(join(dir, name), source)
      }
      const lab = new Lab(mock, sandbox, replies)
      await options.extension?.install(sandbox)
      const pi = await startPi({
        sandbox,
        extensionPath: options.extension === undefined ? extensionEntry() : null,
        discoverExtensions: options.extension !== undefined,
        env: { PI_WORKFLOWS_DB: lab.dbPath },
        timeoutMs: 15_000
      })
      lab.processes.push(pi)
      return lab
    } catch (error) {
      sandbox?.remove()
      await mock.close()
      throw error
    }
  }

  /** The current Pi process. */
  get pi(): PiRpc {
    const current = this.processes.at(-1)
    if (current === undefined) throw new Error("lab: Pi is not started")
    return current
  }

  get sessionFile(): string {
    const file = this.pi.sessionFile
    if (file === undefined) throw new Error("lab: no session file known")
    return file
  }

  /** The session ID Pi reports (`get_state`). */
  async sessionId(): Promise<string> {
    const state = await this.pi.sendOk({ type: "get_state" })
    const data = state.data
    if (
      typeof data === "object" &&
      data !== null &&
      "sessionId" in data &&
      typeof data.sessionId === "string"
    ) {
      return data.sessionId
    }
    throw this.pi.failure("get_state answered without a sessionId")
  }

  /** Stop Pi cleanly (closing stdin: shutdown handlers run). */
  async stop(): Promise<void> {
    await this.pi.stop()
  }

  /** Start a new Pi process on the same session file (`--session`), after `stop`. */
  async resume(): Promise<void> {
    this.processes.push(await this.pi.restart())
  }

  /** Poll `check` until it holds; fail with `label` and Pi's recent events otherwise. */
  async waitUntil(check: () => boolean, label: string, timeoutMs = 15_000): Promise<void> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      let ok = false
      try {
        ok = check()
      } catch {
        ok = false
      }
      if (ok) return
      if (performance.now() > deadline)
        throw this.pi.failure(`timed out after ${timeoutMs} ms waiting until ${label}`)
      if (this.pi.exited !== undefined) throw this.pi.failure(`Pi exited while waiting until ${label}`)
      await sleep(10)
    }
  }

  /**
   * The end of a step of the play: first what it must reach (`until`), then quiet — every run
   * settled and nothing new started for 300 ms — so an extra turn would be seen and counted.
   */
  async settle(
    after: number,
    options: {
      readonly until?: () => boolean
      readonly label?: string
      readonly requireSettle?: boolean
    } = {}
  ): Promise<void> {
    if (options.until !== undefined)
      await this.waitUntil(options.until, options.label ?? "the condition holds")
    await this.pi.waitForQuiet({
      after,
      quietMs: 300,
      timeoutMs: 15_000,
      requireSettle: options.requireSettle ?? true
    })
  }

  /** Send a user prompt (or `/command`) and wait for its effects to settle. */
  async say(
    text: string,
    options: {
      readonly until?: () => boolean
      readonly label?: string
      readonly requireSettle?: boolean
    } = {}
  ): Promise<void> {
    const mark = this.pi.mark()
    await this.pi.prompt(text)
    await this.settle(mark, options)
  }

  intents(): ReadonlyArray<IntentLife> {
    if (!peekTables(this.dbPath).includes("workflow_turn_intents")) return []
    return peekTurnIntents(this.dbPath).map(intentLife)
  }

  runs(): ReadonlyArray<RunView> {
    if (!peekTables(this.dbPath).includes("workflow_runs")) return []
    return peekRows(this.dbPath, "workflow_runs", { orderBy: "created_at, run_id" }).map(runView)
  }

  /** True when every intent is resolved (and there is at least `atLeast` of them). */
  intentsResolved(atLeast = 1): boolean {
    const intents = this.intents()
    return intents.length >= atLeast && intents.every((intent) => intent.resolvedAt !== null)
  }

  runIn(...states: ReadonlyArray<string>): boolean {
    const runs = this.runs()
    return runs.length > 0 && runs.every((run) => states.includes(run.state))
  }

  observe(): Observation {
    const outcomes = this.mock.outcomes()
    const requests = this.mock.requests().map((request): RequestView => {
      const last = request.messages.at(-1)
      return {
        index: request.index,
        trigger: `${last?.role ?? "?"}: ${firstLine(messageText(last))}`,
        reply: this.replies[request.index] ?? 'says "ok" (script exhausted)',
        outcome: outcomes[request.index] ?? "open"
      }
    })
    const messages = customMessages(this.sessionFile).map((entry): MessageView => {
      const details = entry.details
      const turnIntentId =
        typeof details === "object" &&
        details !== null &&
        "turnIntentId" in details &&
        typeof details.turnIntentId === "string"
          ? details.turnIntentId
          : null
      return { customType: entry.customType, firstLine: firstLine(customContentText(entry)), turnIntentId }
    })
    const events = this.processes.flatMap((pi) => pi.events())
    return {
      requests,
      messages,
      intents: this.intents(),
      runs: this.runs(),
      toolResults: events.filter((record) => record.type === "tool_execution_end").map(toolResultOf),
      notices: events
        .filter((record) => record.type === "extension_ui_request" && record.method === "notify")
        .map((record) => (typeof record.message === "string" ? record.message : "")),
      panels: events
        .filter((record) => record.type === "extension_ui_request" && record.method === "setWidget")
        .map((record) =>
          Array.isArray(record.widgetLines)
            ? record.widgetLines.map((line: unknown) => (typeof line === "string" ? line : "")).join("\n")
            : ""
        )
    }
  }

  /**
   * Stop Pi and the model and remove the sandbox. With `keepDbAs`, the controller database (with
   * its WAL files) is first copied there, for the operator CLI to read afterwards.
   */
  async close(options: { readonly keepDbAs?: string } = {}): Promise<void> {
    for (const pi of this.processes) await pi.dispose()
    await this.mock.close()
    if (options.keepDbAs !== undefined) {
      for (const suffix of ["", "-wal", "-shm"]) {
        if (existsSync(`${this.dbPath}${suffix}`))
          copyFileSync(`${this.dbPath}${suffix}`, `${options.keepDbAs}${suffix}`)
      }
    }
    this.sandbox.remove()
  }
}
