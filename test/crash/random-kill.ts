/**
 * Crash trials at random moments: real Pi runs a workflow scenario and is killed with SIGKILL at
 * a seeded random time in a window that covers the start, the interruption, the terminal write
 * and the successor's append and model request. A new Pi then starts on the same session file and
 * database, with nothing done by hand (no lease is expired for it). The verdict is judged by what
 * the model saw: the successor messages in the session branch and the model requests answering
 * them.
 */
import { cpSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Schema } from "effect"
import { type ChatRequest, contentText, type Reply, startMockOpenAI } from "../e2e/harness/mock-openai.ts"
import { type PiRpc, startPi } from "../e2e/harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../e2e/harness/pi-sandbox.ts"
import { customContentText, customMessages, sessionEntries } from "../e2e/harness/session-file.ts"
import { extensionEntry, requestIdIn } from "../e2e/extension/lab.ts"
import { waitingQuestion } from "../support/fixtures.ts"

export const KILL_SCENARIOS = [
  "selfCancel",
  "crashAfterStart",
  "terminalTimeout",
  "completed",
  "waiting"
] as const
export type KillScenario = (typeof KILL_SCENARIOS)[number]

/** The terminal successor a run's end owes the model (the run's result or a fallback). */
const SUCCESSOR_TYPES = new Set(["pi-workflows-deferred-turn", "pi-workflows-presentation"])
const STEP_MARKER = "is waiting for step"
const PROMPT = "Run the workflow for this trial."

const WORKFLOWS: Record<KillScenario, { readonly name: string; readonly source: string }> = {
  selfCancel: {
    name: "triage",
    source: `export default {
  name: "triage",
  startAt: "label",
  nodes: { label: { type: "agent", prompt: "Label issue #42.", timeoutMs: null } },
  edges: []
}
`
  },
  crashAfterStart: {
    name: "nightly",
    source: `export default {
  name: "nightly",
  startAt: "collect",
  nodes: {
    collect: { type: "compute", run: async () => { await new Promise((r) => setTimeout(r, 150)); throw new Error("metrics database unreachable") } },
    summarize: { type: "agent", prompt: "Summarize." }
  },
  edges: [{ from: "collect", to: "summarize" }]
}
`
  },
  terminalTimeout: {
    name: "lint",
    source: `export default {
  name: "lint",
  startAt: "fix",
  nodes: { fix: { type: "agent", prompt: "Fix the lint errors.", timeoutMs: 600 } },
  edges: []
}
`
  },
  completed: {
    name: "greet",
    source: `export default {
  name: "greet",
  startAt: "hello",
  nodes: { hello: { type: "agent", prompt: "Say hello: answer {\\"greeting\\": string}.", timeoutMs: null } },
  edges: [],
  presentation: ({ result }) => "Greeting ready: " + result.greeting
}
`
  },
  // The step times out into a waiting checkpoint: its presentation answers the timeout's intent,
  // the model answers the question, and the run completes with its result.
  waiting: {
    name: "review",
    source: `export default {
  name: "review",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch.", timeoutMs: 600 },
    ask: { type: "wait", prompt: "The review timed out. Merge anyway?" },
    merge: { type: "compute", run: () => ({ merged: true }) }
  },
  edges: [
    { from: "review", switch: { on: "$result.outcome", cases: { ok: "merge", timed_out: "ask" } } },
    { from: "ask", to: "merge" }
  ],
  presentation: () => "The patch is merged."
}
`
  }
}

/** The waiting presentation's own words (checkpoint.ts `waitingMessage`). */
const WAIT_MARKER = "for an answer"

const isWaiting = (details: unknown): boolean => waitingQuestion(details) !== null

const lastText = (request: ChatRequest): { readonly role: string; readonly text: string } => {
  const last = request.messages.at(-1)
  return { role: last?.role ?? "", text: contentText(last?.content) }
}

/** The scripted model: it reacts to what it sees, before and after the restart alike. */
const react =
  (scenario: KillScenario) =>
  (request: ChatRequest): Reply => {
    const { role, text } = lastText(request)
    if (role === "user" && text === PROMPT) {
      return {
        toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: WORKFLOWS[scenario].name } }]
      }
    }
    if (role === "user" && text.includes(WAIT_MARKER)) {
      return {
        toolCalls: [
          { name: "workflow", arguments: { action: "answer", requestId: requestIdIn(text), answer: "yes" } }
        ]
      }
    }
    if (role === "user" && text.includes(STEP_MARKER)) {
      if (scenario === "selfCancel")
        return { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] }
      if (scenario === "terminalTimeout" || scenario === "waiting")
        return { text: "Still working…", delayMs: 2_000 }
      return {
        toolCalls: [
          {
            name: "workflow",
            arguments: { action: "submit", requestId: requestIdIn(text), output: { greeting: "hello" } }
          }
        ]
      }
    }
    return { text: "Noted." }
  }

export interface RunOutcome {
  readonly runId: string
  readonly state: string
  readonly claimed: boolean
  /** Terminal successor messages for the run in the branch. */
  readonly successors: number
  /** Model requests whose newest message is one of those successors. */
  readonly answers: number
}

export type Verdict = "ok" | "lost" | "duplicate" | "unanswered" | "stuck"

export interface KillTrialResult {
  readonly scenario: KillScenario
  readonly seed: number
  readonly killAtMs: number
  /** The start tool's successful result is in the session: from then on a successor is owed. */
  readonly owed: boolean
  readonly runs: ReadonlyArray<RunOutcome>
  readonly pendingEligible: number
  readonly verdict: Verdict
  readonly detail: string
  /** From the restart to the end of recovery (every debt paid or the deadline). */
  readonly recoveryMs: number
}

const RunRow = Schema.Struct({
  run_id: Schema.String,
  state: Schema.String,
  claim_token: Schema.NullOr(Schema.String)
})

const readRuns = (dbPath: string) => {
  const db = new BetterSqlite(dbPath, { readonly: true, fileMustExist: true })
  try {
    db.pragma("busy_timeout = 2000")
    const runs = Schema.decodeUnknownSync(Schema.Array(RunRow))(
      db.prepare("SELECT run_id, state, claim_token FROM workflow_runs").all()
    )
    const pending = db
      .prepare(
        "SELECT count(*) AS n FROM workflow_turn_intents WHERE resolved_at IS NULL AND eligible_at IS NOT NULL"
      )
      .pluck()
      .get()
    return { runs, pendingEligible: typeof pending === "number" ? pending : 0 }
  } catch {
    return { runs: [], pendingEligible: 0 }
  } finally {
    db.close()
  }
}

const TERMINAL = new Set(["completed", "failed", "cancelled", "timed_out"])

/** Whether the session file holds a successful `workflow start` result. */
const startResultWritten = (file: string): boolean =>
  sessionEntries(file).some((entry) => {
    const message = entry.message
    if (entry.type !== "message" || typeof message !== "object" || message === null) return false
    if (!("role" in message) || message.role !== "toolResult") return false
    const isError = "isError" in message && message.isError === true
    const text = "content" in message ? contentText(message.content) : ""
    return !isError && text.includes("is queued as run")
  })

const runIdOf = (details: unknown): string | undefined =>
  typeof details === "object" && details !== null && "runId" in details && typeof details.runId === "string"
    ? details.runId
    : undefined

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

/** mulberry32: a small seeded generator, so a seed names one kill time. */
export const seededUnit = (seed: number): number => {
  let t = (seed + 0x6d2b79f5) >>> 0
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

/**
 * Per scenario, how long after the user prompt the kill may come: a little past the time the
 * whole scenario takes unkilled on a loaded 2-core machine, so every phase gets hit.
 */
export const KILL_WINDOW_MS: Record<KillScenario, number> = {
  selfCancel: 1_400,
  crashAfterStart: 1_400,
  terminalTimeout: 2_600,
  completed: 1_600,
  waiting: 2_400
}

export interface KillTrialOptions {
  /** The kill happens at most this many ms after the user prompt (default: `KILL_WINDOW_MS`). */
  readonly windowMs?: number
  /** How long the restarted Pi gets to pay every debt (default 12 s). */
  readonly recoveryDeadlineMs?: number
  /**
   * Where a trial that is not ok leaves its evidence (the sandbox with the session file and the
   * database, the model requests and each Pi's stderr), in `<keepDir>/<scenario>-<seed>`.
   */
  readonly keepDir?: string
}

export const runKillTrial = async (
  scenario: KillScenario,
  seed: number,
  options: KillTrialOptions = {}
): Promise<KillTrialResult> => {
  const windowMs = options.windowMs ?? KILL_WINDOW_MS[scenario]
  const killAtMs = Math.round(seededUnit(seed) * windowMs)
  const mock = await startMockOpenAI({ script: Array.from({ length: 40 }, () => react(scenario)) })
  let sandbox: PiSandbox | undefined
  const processes: Array<PiRpc> = []
  try {
    sandbox = createPiSandbox(mock.baseUrl, "pwt-kill-")
    const dir = join(sandbox.workDir, ".pi", "workflows")
    mkdirSync(dir, { recursive: true })
    const workflow = WORKFLOWS[scenario]
    writeFileSync(join(dir, `${workflow.name}.workflow.mjs`), workflow.source)
    const dbPath = join(sandbox.root, "controller.db")
    const env = { PI_WORKFLOWS_DB: dbPath }
    const first = await startPi({ sandbox, extensionPath: extensionEntry(), env, timeoutMs: 15_000 })
    processes.push(first)
    await first.prompt(PROMPT)
    await sleep(killAtMs)
    await first.kill()

    const restartedAt = performance.now()
    const second = await first.restart({ env })
    processes.push(second)
    const file = second.sessionFile ?? ""
    const deadline = restartedAt + (options.recoveryDeadlineMs ?? 12_000)
    // Recovered when every run has ended, its successor is in the branch and answered, and no
    // eligible intent is pending; a trial that never gets there is judged as it stands.
    const settled = () => {
      const { runs, pendingEligible } = readRuns(dbPath)
      if (pendingEligible > 0 || !runs.every((r) => TERMINAL.has(r.state))) return false
      const messages = customMessages(file).filter(
        (m) => SUCCESSOR_TYPES.has(m.customType) && !isWaiting(m.details)
      )
      return runs.every((r) => messages.some((m) => runIdOf(m.details) === r.run_id))
    }
    while (performance.now() < deadline && !settled()) await sleep(50)
    const recoveryMs = performance.now() - restartedAt
    try {
      await second.waitForQuiet({ quietMs: 400, timeoutMs: 8_000, requireSettle: false })
    } catch {
      // judged below as it stands
    }
    const result = judge({ scenario, seed, killAtMs, dbPath, file, requests: mock.requests(), recoveryMs })
    if (options.keepDir !== undefined && result.verdict !== "ok") {
      const into = join(options.keepDir, `${scenario}-${seed}`)
      mkdirSync(into, { recursive: true })
      cpSync(sandbox.root, join(into, "sandbox"), { recursive: true })
      writeFileSync(join(into, "requests.json"), JSON.stringify(mock.requests(), null, 2))
      for (const [i, pi] of processes.entries()) writeFileSync(join(into, `pi-${i + 1}.stderr`), pi.stderr())
      writeFileSync(join(into, "verdict.txt"), `${formatTrial(result)}\n`)
    }
    return result
  } finally {
    for (const pi of processes) await pi.dispose()
    await mock.close()
    sandbox?.remove()
  }
}

const judge = (input: {
  readonly scenario: KillScenario
  readonly seed: number
  readonly killAtMs: number
  readonly dbPath: string
  readonly file: string
  readonly requests: ReadonlyArray<ChatRequest>
  readonly recoveryMs: number
}): KillTrialResult => {
  const { runs: rows, pendingEligible } = readRuns(input.dbPath)
  const all = customMessages(input.file)
  // A waiting presentation is not the run's terminal successor; each question is asked once.
  const successors = all.filter((m) => SUCCESSOR_TYPES.has(m.customType) && !isWaiting(m.details))
  const questions = all.filter((m) => isWaiting(m.details)).map((m) => customContentText(m))
  const runs = rows.map((row): RunOutcome => {
    const mine = successors.filter((m) => runIdOf(m.details) === row.run_id)
    const texts = new Set(mine.map((m) => customContentText(m)))
    const answers = input.requests.filter((r) => {
      const last = lastText(r)
      return last.role === "user" && texts.has(last.text)
    }).length
    return {
      runId: row.run_id,
      state: row.state,
      claimed: row.claim_token !== null,
      successors: mine.length,
      answers
    }
  })
  const owed = input.file !== "" && startResultWritten(input.file)
  const problems: Array<[Verdict, string]> = []
  for (const run of runs) {
    if (run.successors > 1) problems.push(["duplicate", `${run.runId}: ${run.successors} successor messages`])
    if (run.answers > 1) problems.push(["duplicate", `${run.runId}: ${run.answers} model requests answer it`])
    if (!TERMINAL.has(run.state) || run.claimed) {
      problems.push(["stuck", `${run.runId}: ${run.state}${run.claimed ? ", still claimed" : ""}`])
    } else if (owed && run.successors === 0)
      problems.push(["lost", `${run.runId}: ${run.state}, no successor`])
    else if (run.successors === 1 && run.answers === 0) {
      problems.push(["unanswered", `${run.runId}: successor never reached the model`])
    }
  }
  for (const question of new Set(questions)) {
    const copies = questions.filter((q) => q === question).length
    const asked = input.requests.filter((r) => {
      const last = lastText(r)
      return last.role === "user" && last.text === question
    }).length
    if (copies > 1) problems.push(["duplicate", `a waiting question ${copies} times in the branch`])
    if (asked > 1) problems.push(["duplicate", `a waiting question answered by ${asked} model requests`])
  }
  if (owed && runs.length === 0)
    problems.push(["lost", "the start result is in the session but no run exists"])
  if (pendingEligible > 0) problems.push(["stuck", `${pendingEligible} eligible intents still pending`])
  const order: ReadonlyArray<Verdict> = ["duplicate", "lost", "unanswered", "stuck"]
  const worst = order.find((v) => problems.some(([p]) => p === v)) ?? "ok"
  return {
    scenario: input.scenario,
    seed: input.seed,
    killAtMs: input.killAtMs,
    owed,
    runs,
    pendingEligible,
    verdict: worst,
    detail: problems.map(([v, d]) => `${v}: ${d}`).join("; "),
    recoveryMs: input.recoveryMs
  }
}

export const formatTrial = (r: KillTrialResult): string =>
  `${r.scenario} seed ${r.seed} kill@${r.killAtMs}ms owed=${r.owed} → ${r.verdict}` +
  ` runs=[${r.runs.map((x) => `${x.state}:${x.successors}/${x.answers}`).join(",")}]` +
  ` recovery ${Math.round(r.recoveryMs)} ms${r.detail === "" ? "" : ` (${r.detail})`}`
