/**
 * One real-Pi "lab" for an extension scenario: a scripted mock model, a sandbox with the
 * project's workflow files, the controller database in the sandbox, and Pi started in RPC mode
 * with the entry `package.json` names in `pi.extensions`. It also turns what happened into an
 * `Observation`: the model requests (what triggered each one, what the script answered), the
 * custom messages in the session file, the turn-intent rows and the run rows.
 *
 * No vitest here: `npm run demo` (scripts/demo.ts) plays the same scenarios under plain Node.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { DEFAULT_LEASE_MS } from "../../../src/delivery/coordinator-live.ts"
import {
  type ChatMessage,
  type ChatRequest,
  contentText,
  type MockOpenAI,
  type Reply,
  type ScriptStep,
  startMockOpenAI
} from "../harness/mock-openai.ts"
import { type PiRpc, startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../harness/pi-sandbox.ts"
import type { RpcRecord } from "../harness/rpc-records.ts"
import { customContentText, customMessages } from "../harness/session-file.ts"
import { peekRows, peekTables, peekTurnIntents, type Row } from "../harness/sqlite-peek.ts"

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

const firstLine = (text: string, max = 110): string => {
  const line = text.split("\n")[0] ?? ""
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

const describeReply = (reply: Reply): string => {
  const delay = reply.delayMs === undefined ? "" : ` (after ${reply.delayMs} ms)`
  if ("text" in reply) return `says ${JSON.stringify(firstLine(reply.text, 60))}${delay}`
  const calls = reply.toolCalls.map((call) => `${call.name} ${JSON.stringify(call.arguments)}`)
  return `calls ${calls.join(", ")}${delay}`
}

/** One model request: what the model got last, and how the script answered. */
export interface RequestView {
  readonly index: number
  /** Role and first line of the newest message (a custom message arrives as `user`). */
  readonly trigger: string
  readonly reply: string
  readonly outcome: string
}

export interface MessageView {
  readonly customType: string
  readonly firstLine: string
  readonly turnIntentId: string | null
}

/** One `workflow_turn_intents` row as a life: created → eligible → claimed → resolved. */
export interface IntentLife {
  readonly intentId: string
  readonly runId: string
  readonly cause: string
  readonly nodeId: string | null
  readonly observedState: string
  readonly reason: string | null
  readonly requestedAt: string
  readonly eligibleAt: string | null
  /** Derived: the claim's lease end minus the coordinator's lease (no column stores it). */
  readonly claimedAt: string | null
  readonly resolvedAt: string | null
  readonly resolution: string | null
}

export interface RunView {
  readonly runId: string
  readonly workflow: string
  readonly state: string
  readonly error: string | null
}

export interface ToolResultView {
  readonly tool: string
  readonly isError: boolean
  readonly text: string
}

export interface Observation {
  readonly requests: ReadonlyArray<RequestView>
  readonly messages: ReadonlyArray<MessageView>
  readonly intents: ReadonlyArray<IntentLife>
  readonly runs: ReadonlyArray<RunView>
  readonly toolResults: ReadonlyArray<ToolResultView>
  /** `ctx.ui.notify` texts (RPC `extension_ui_request` notify records). */
  readonly notices: ReadonlyArray<string>
}

const str = (row: Row, key: string): string | null => {
  const value = row[key]
  return typeof value === "string" ? value : null
}

const factsOf = (row: Row): { observedState: string; reason: string | null } => {
  const parsed: unknown = JSON.parse(str(row, "fallback_facts_json") ?? "{}")
  if (typeof parsed !== "object" || parsed === null) return { observedState: "?", reason: null }
  const observedState =
    "observedState" in parsed && typeof parsed.observedState === "string" ? parsed.observedState : "?"
  const reason = "reason" in parsed && typeof parsed.reason === "string" ? parsed.reason : null
  return { observedState, reason }
}

const intentLife = (row: Row): IntentLife => {
  const expires = row.delivery_claim_expires_at
  return {
    intentId: str(row, "intent_id") ?? "?",
    runId: str(row, "run_id") ?? "?",
    cause: str(row, "cause") ?? "?",
    nodeId: str(row, "node_id"),
    ...factsOf(row),
    requestedAt: str(row, "requested_at") ?? "?",
    eligibleAt: str(row, "eligible_at"),
    claimedAt: typeof expires === "number" ? new Date(expires - DEFAULT_LEASE_MS).toISOString() : null,
    resolvedAt: str(row, "resolved_at"),
    resolution: str(row, "resolution")
  }
}

const runView = (row: Row): RunView => {
  const errorJson = str(row, "error_json")
  const parsed: unknown = errorJson === null ? null : JSON.parse(errorJson)
  const error =
    typeof parsed === "object" && parsed !== null && "message" in parsed && typeof parsed.message === "string"
      ? parsed.message
      : null
  return {
    runId: str(row, "run_id") ?? "?",
    workflow: str(row, "workflow_name") ?? "?",
    state: str(row, "state") ?? "?",
    error
  }
}

const toolResultOf = (record: RpcRecord): ToolResultView => {
  const result = record.result
  const content =
    typeof result === "object" && result !== null && "content" in result ? result.content : undefined
  return {
    tool: typeof record.toolName === "string" ? record.toolName : "?",
    isError: record.isError === true,
    text: contentText(content)
  }
}

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
        .map((record) => (typeof record.message === "string" ? record.message : ""))
    }
  }

  async close(): Promise<void> {
    for (const pi of this.processes) await pi.dispose()
    await this.mock.close()
    this.sandbox.remove()
  }
}
