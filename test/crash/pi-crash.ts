/**
 * Crash trials in real Pi: run a scenario with `PI_WORKFLOW_TURNS_CRASH_AT` set, so Pi kills
 * itself (SIGKILL) at one step of a delivery; let the dead process's leases run out (by moving
 * their expiry into the past, as time would); restart Pi on the same session file without the
 * variable; wait until it is quiet; and report what the session file and the database hold.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Schema } from "effect"
import {
  type AFTER_SUCCESSOR_REQUEST,
  type BEFORE_SUCCESSOR_REQUEST,
  CRASH_AT_ENV
} from "../../src/delivery/unanswered-successor.ts"
import type { CrashPoint } from "../../src/delivery/coordinator.ts"
import { contentText, type MockOpenAI, type ScriptStep, startMockOpenAI } from "../e2e/harness/mock-openai.ts"
import { type PiRpc, startPi } from "../e2e/harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../e2e/harness/pi-sandbox.ts"
import { customContentText, customMessages } from "../e2e/harness/session-file.ts"
import { extensionEntry } from "../e2e/extension/lab.ts"

export const FALLBACK = "pi-workflows-deferred-turn"

export interface Trial {
  readonly name: string
  readonly workflows: Readonly<Record<string, string>>
  /** The model's replies before the crash. */
  readonly before: ReadonlyArray<ScriptStep>
  /** The model's replies after the restart. */
  readonly after: ReadonlyArray<ScriptStep>
  readonly prompt: string
}

export interface TrialOutcome {
  /** How the first process ended (`SIGKILL` when the crash point was reached). */
  readonly signal: string | null
  /** Intent rows at the end. */
  readonly intents: ReadonlyArray<IntentRow>
  /** For each intent: how many custom messages in the session file carry its ID. */
  readonly messagesPerIntent: Readonly<Record<string, number>>
  /** Custom message types in the session file, in order. */
  readonly messageTypes: ReadonlyArray<string>
  readonly requests: number
  /** For each intent: how many model requests have one of its messages as the newest message. */
  readonly answersPerIntent: Readonly<Record<string, number>>
  readonly runs: ReadonlyArray<{ readonly run_id: string; readonly state: string }>
  readonly elapsedMs: number
}

const IntentRow = Schema.Struct({
  intent_id: Schema.String,
  cause: Schema.String,
  eligible_at: Schema.NullOr(Schema.String),
  resolved_at: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Schema.String)
})
type IntentRow = typeof IntentRow.Type
const RunRow = Schema.Struct({ run_id: Schema.String, state: Schema.String })

const withDb = <A>(path: string, use: (db: BetterSqlite.Database) => A): A => {
  const db = new BetterSqlite(path)
  try {
    return use(db)
  } finally {
    db.close()
  }
}

/** The dead process's claims run out: what 30–60 s of waiting would do, without the wait. */
export const expireClaims = (dbPath: string): void =>
  withDb(dbPath, (db) => {
    db.prepare(
      `UPDATE workflow_turn_intents SET delivery_claim_expires_at = 1
        WHERE resolved_at IS NULL AND delivery_claim_token IS NOT NULL`
    ).run()
    db.prepare("UPDATE workflow_runs SET claim_expires_at = 1 WHERE claim_token IS NOT NULL").run()
  })

const readIntents = (dbPath: string) =>
  withDb(dbPath, (db) =>
    Schema.decodeUnknownSync(Schema.Array(IntentRow))(
      db.prepare("SELECT * FROM workflow_turn_intents ORDER BY requested_at, intent_id").all()
    )
  )

const readRuns = (dbPath: string) =>
  withDb(dbPath, (db) =>
    Schema.decodeUnknownSync(Schema.Array(RunRow))(
      db.prepare("SELECT run_id, state FROM workflow_runs").all()
    )
  )

const intentOf = (details: unknown): string | null =>
  typeof details === "object" &&
  details !== null &&
  "turnIntentId" in details &&
  typeof details.turnIntentId === "string"
    ? details.turnIntentId
    : null

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

/** Wait until `check` holds or the process exits; false on timeout. */
const until = async (pi: PiRpc, check: () => boolean, timeoutMs: number): Promise<boolean> => {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (check()) return true
    if (pi.exited !== undefined) return check()
    await sleep(10)
  }
  return false
}

export const runTrial = async (
  trial: Trial,
  crashAt: CrashPoint | typeof BEFORE_SUCCESSOR_REQUEST | typeof AFTER_SUCCESSOR_REQUEST,
  options: {
    /** Further restarts (each after the previous Pi went quiet and was killed). */
    readonly extraRestarts?: number
    /** The first restart reaches the same crash point again (and is restarted once more). */
    readonly crashAgain?: boolean
  } = {}
): Promise<TrialOutcome> => {
  const started = performance.now()
  const mock: MockOpenAI = await startMockOpenAI({ script: [...trial.before, ...trial.after] })
  let sandbox: PiSandbox | undefined
  const processes: PiRpc[] = []
  try {
    sandbox = createPiSandbox(mock.baseUrl, "pwt-crash-")
    const dir = join(sandbox.workDir, ".pi", "workflows")
    mkdirSync(dir, { recursive: true })
    for (const [name, source] of Object.entries(trial.workflows)) writeFileSync(join(dir, name), source)
    const dbPath = join(sandbox.root, "controller.db")
    const env = { PI_WORKFLOWS_DB: dbPath }
    const first = await startPi({
      sandbox,
      extensionPath: extensionEntry(),
      env: { ...env, [CRASH_AT_ENV]: crashAt },
      timeoutMs: 15_000
    })
    processes.push(first)
    await first.prompt(trial.prompt)
    // The crash point kills Pi; a trial whose point is never reached fails on this wait.
    await until(first, () => first.exited !== undefined, 15_000)
    const signal = first.exited?.signal ?? null
    if (first.exited === undefined) await first.kill()
    expireClaims(dbPath)

    let second = await first.restart({
      env: options.crashAgain === true ? { ...env, [CRASH_AT_ENV]: crashAt } : env
    })
    processes.push(second)
    if (options.crashAgain === true) {
      const again = second
      await until(again, () => again.exited !== undefined, 15_000)
      if (again.exited === undefined) await again.kill()
      second = await again.restart({ env })
      processes.push(second)
    }
    // Owed deliveries happen at session start (and in recovered runs): wait for them, then quiet.
    const owed = () => readIntents(dbPath).every((i) => i.resolved_at !== null || i.eligible_at === null)
    await until(second, owed, 8_000)
    await second.waitForQuiet({ quietMs: 400, timeoutMs: 15_000, requireSettle: false })
    for (let i = 0; i < (options.extraRestarts ?? 0); i++) {
      await second.kill()
      second = await second.restart({ env })
      processes.push(second)
      await second.waitForQuiet({ quietMs: 400, timeoutMs: 15_000, requireSettle: false })
    }
    const file = second.sessionFile ?? ""
    const messages = customMessages(file)
    const messagesPerIntent: Record<string, number> = {}
    for (const intent of readIntents(dbPath)) messagesPerIntent[intent.intent_id] = 0
    const answersPerIntent: Record<string, number> = {}
    const newest = mock.requests().map((request) => contentText(request.messages.at(-1)?.content))
    for (const message of messages) {
      const id = intentOf(message.details)
      if (id === null) continue
      messagesPerIntent[id] = (messagesPerIntent[id] ?? 0) + 1
      const text = customContentText(message)
      answersPerIntent[id] = (answersPerIntent[id] ?? 0) + newest.filter((t) => t === text).length
    }
    return {
      signal,
      intents: readIntents(dbPath),
      messagesPerIntent,
      messageTypes: messages.map((m) => m.customType),
      requests: mock.requestCount(),
      answersPerIntent,
      runs: readRuns(dbPath),
      elapsedMs: performance.now() - started
    }
  } finally {
    for (const pi of processes) await pi.dispose()
    await mock.close()
    sandbox?.remove()
  }
}
