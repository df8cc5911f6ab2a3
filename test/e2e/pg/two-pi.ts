/**
 * Two real Pi processes on two sessions sharing one PostgreSQL database (PI_WORKFLOWS_DB set to
 * a throwaway cluster's URL). Pi A runs a workflow and is killed (SIGKILL, via
 * `PI_WORKFLOW_TURNS_CRASH_AT`) in the middle of a delivery; Pi B works in its own session on
 * the same database meanwhile. A's leases then run out (their expiry moved into the past, as
 * time would) and a new Pi process starts on A's session file: it takes the run over (a new
 * claim token) and delivers the interrupted turn's successor. The outcome is read from both
 * session files, both mock models and the database.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Schema } from "effect"
import pg from "pg"
import type { CrashPoint } from "../../../src/delivery/coordinator.ts"
import { CRASH_AT_ENV } from "../../../src/delivery/unanswered-successor.ts"
import type { Trial } from "../../crash/pi-crash.ts"
import { extensionEntry, messageText } from "../extension/lab.ts"
import { type MockOpenAI, startMockOpenAI } from "../harness/mock-openai.ts"
import { type PiRpc, startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../harness/pi-sandbox.ts"
import { customMessages } from "../harness/session-file.ts"

const IntentRow = Schema.Struct({
  intent_id: Schema.String,
  cause: Schema.String,
  target_session_id: Schema.String,
  eligible_at: Schema.NullOr(Schema.String),
  resolved_at: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Schema.String)
})
const RunRow = Schema.Struct({
  run_id: Schema.String,
  state: Schema.String,
  target_session_id: Schema.String,
  claim_token: Schema.NullOr(Schema.String),
  claims: Schema.Number
})

const query = async <A, I>(url: string, schema: Schema.Schema<A, I>, text: string) => {
  const client = new pg.Client({ connectionString: url })
  client.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value))
  await client.connect()
  try {
    return Schema.decodeUnknownSync(Schema.Array(schema))((await client.query(text)).rows)
  } finally {
    await client.end()
  }
}

const readIntents = (url: string) =>
  query(url, IntentRow, "SELECT * FROM workflow_turn_intents ORDER BY requested_at, intent_id")
const readRuns = (url: string) =>
  query(url, RunRow, "SELECT run_id, state, target_session_id, claim_token, claims FROM workflow_runs")

/** The dead process's claims run out: what 30–60 s of waiting would do, without the wait. */
const expireClaims = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(
      `UPDATE workflow_turn_intents SET delivery_claim_expires_at = 1
        WHERE resolved_at IS NULL AND delivery_claim_token IS NOT NULL`
    )
    await client.query("UPDATE workflow_runs SET claim_expires_at = 1 WHERE claim_token IS NOT NULL")
  } finally {
    await client.end()
  }
}

const intentOf = (details: unknown): string | null =>
  typeof details === "object" &&
  details !== null &&
  "turnIntentId" in details &&
  typeof details.turnIntentId === "string"
    ? details.turnIntentId
    : null

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

const until = async (pi: PiRpc, check: () => Promise<boolean>, timeoutMs: number) => {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (await check()) return true
    if (pi.exited !== undefined) return check()
    await sleep(20)
  }
  return false
}

export interface TwoPiOutcome {
  readonly signal: string | null
  /** The run as Pi A left it (its claim), and as the database holds it at the end. */
  readonly runAtKill: ReadonlyArray<typeof RunRow.Type>
  readonly runs: ReadonlyArray<typeof RunRow.Type>
  readonly intents: ReadonlyArray<typeof IntentRow.Type>
  /** For each intent: custom messages carrying its ID, in A's session file and in B's. */
  readonly inA: Readonly<Record<string, number>>
  readonly inB: Readonly<Record<string, number>>
  readonly sessionA: string
  readonly sessionB: string
  readonly requestsA: number
  readonly requestsB: number
  /** The newest message's text of each of A's model requests (both processes), in order. */
  readonly newestA: ReadonlyArray<string>
  /** The `details` of each step reminder in A's session file and in B's, oldest first. */
  readonly remindersA: ReadonlyArray<unknown>
  readonly remindersB: ReadonlyArray<unknown>
  /** `details.kind` of each user notification in A's session file and in B's. */
  readonly noticesA: ReadonlyArray<unknown>
  readonly noticesB: ReadonlyArray<unknown>
}

const perIntent = (file: string, intents: ReadonlyArray<{ readonly intent_id: string }>) => {
  const counts: Record<string, number> = {}
  for (const intent of intents) counts[intent.intent_id] = 0
  for (const message of customMessages(file)) {
    const id = intentOf(message.details)
    if (id !== null) counts[id] = (counts[id] ?? 0) + 1
  }
  return counts
}

const sessionIdOf = async (pi: PiRpc): Promise<string> => {
  const state = await pi.sendOk({ type: "get_state" })
  const data = state.data
  if (typeof data === "object" && data !== null && "sessionId" in data && typeof data.sessionId === "string")
    return data.sessionId
  throw new Error("get_state answered without a sessionId")
}

const REMINDER = "pi-workflows-step-reminder"
const NOTIFICATION = "pi-workflows-notification"
const kindOf = (details: unknown): unknown =>
  typeof details === "object" && details !== null && "kind" in details ? details.kind : undefined

/**
 * `doneA`: what A's session file shows once the new process is done after the successor (e.g.
 * the user's notice after the step reminders); waited for before the outcome is read.
 */
export const runTwoPi = async (
  url: string,
  trial: Trial,
  crashAt: CrashPoint,
  doneA: (sessionFile: string) => boolean = () => true
): Promise<TwoPiOutcome> => {
  const mockA: MockOpenAI = await startMockOpenAI({ script: [...trial.before, ...trial.after] })
  const mockB: MockOpenAI = await startMockOpenAI({
    script: [{ text: "Hello from session B." }, { text: "Still here in session B." }]
  })
  const sandboxes: Array<PiSandbox> = []
  const processes: Array<PiRpc> = []
  try {
    const sandboxA = createPiSandbox(mockA.baseUrl, "pwt-two-pi-a-")
    const sandboxB = createPiSandbox(mockB.baseUrl, "pwt-two-pi-b-")
    sandboxes.push(sandboxA, sandboxB)
    for (const sandbox of sandboxes) {
      const dir = join(sandbox.workDir, ".pi", "workflows")
      mkdirSync(dir, { recursive: true })
      for (const [name, source] of Object.entries(trial.workflows)) writeFileSync(join(dir, name), source)
    }
    const env = { PI_WORKFLOWS_DB: url }
    const piB = await startPi({ sandbox: sandboxB, extensionPath: extensionEntry(), env, timeoutMs: 15_000 })
    processes.push(piB)
    const piA = await startPi({
      sandbox: sandboxA,
      extensionPath: extensionEntry(),
      env: { ...env, [CRASH_AT_ENV]: crashAt },
      timeoutMs: 15_000
    })
    processes.push(piA)
    const sessionA = await sessionIdOf(piA)
    const sessionB = await sessionIdOf(piB)
    // B works in its own session on the shared database while A runs and dies.
    await piB.prompt("Say hello.")
    await piA.prompt(trial.prompt)
    await until(piA, async () => piA.exited !== undefined, 15_000)
    const signal = piA.exited?.signal ?? null
    if (piA.exited === undefined) await piA.kill()
    const runAtKill = await readRuns(url)
    await expireClaims(url)
    await piB.prompt("Are you still there?")

    const piA2 = await piA.restart({ env })
    processes.push(piA2)
    // Wait for the owed successor itself: the takeover, the recovery prompt and its resolution
    // (a pending intent with a natural successor is not eligible, so "nothing eligible" alone
    // would stop the wait before the new process has sent anything).
    const owed = async () => {
      const intents = await readIntents(url)
      return intents.length > 0 && intents.every((i) => i.resolved_at !== null)
    }
    await until(piA2, async () => (await owed()) && doneA(piA2.sessionFile ?? ""), 15_000)
    await piA2.waitForQuiet({ quietMs: 400, timeoutMs: 15_000, requireSettle: false })
    await piB.waitForQuiet({ quietMs: 200, timeoutMs: 15_000, requireSettle: false })
    const intents = await readIntents(url)
    return {
      signal,
      runAtKill,
      runs: await readRuns(url),
      intents,
      inA: perIntent(piA2.sessionFile ?? "", intents),
      inB: perIntent(piB.sessionFile ?? "", intents),
      sessionA,
      sessionB,
      requestsA: mockA.requestCount(),
      requestsB: mockB.requestCount(),
      newestA: mockA.requests().map((request) => messageText(request.messages.at(-1))),
      remindersA: customMessages(piA2.sessionFile ?? "", REMINDER).map((entry) => entry.details),
      remindersB: customMessages(piB.sessionFile ?? "", REMINDER).map((entry) => entry.details),
      noticesA: customMessages(piA2.sessionFile ?? "", NOTIFICATION).map((entry) => kindOf(entry.details)),
      noticesB: customMessages(piB.sessionFile ?? "", NOTIFICATION).map((entry) => kindOf(entry.details))
    }
  } finally {
    for (const pi of processes) await pi.dispose()
    await mockA.close()
    await mockB.close()
    for (const sandbox of sandboxes) sandbox.remove()
  }
}
