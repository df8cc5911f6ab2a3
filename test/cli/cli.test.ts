/**
 * The operator CLI as users run it: the built bin (`node dist/cli.js`, what package.json `bin`
 * names) in a child process, against databases written by the real stores.
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import BetterSqlite from "better-sqlite3"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../../src/store/schema.ts"
import { expectOneLine, runCli } from "./cli-support.ts"
import { seedChain, seedHealthy, seedStale, withStores } from "./seed-sqlite.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"] as string

let dir = ""
let healthyDb = ""
let staleDb = ""

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runCli(join(root, bin), dir, args, env)

let resolvedIntentId = ""

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-"))
  healthyDb = join(dir, "healthy.db")
  staleDb = join(dir, "stale.db")
  resolvedIntentId = await Effect.runPromise(withStores(healthyDb, seedHealthy))
  await Effect.runPromise(withStores(staleDb, seedStale))
})

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

const fileHash = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex")

describe("pi-workflow-turns (the bin)", () => {
  it("runs: an aligned table, newest first, no colour when piped; --state filters; --json for scripts", async () => {
    const table = await cli(["runs", "--db", healthyDb])
    expect(table.code).toBe(0)
    const lines = table.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^RUN\s+WORKFLOW\s+STATE\s+NODE\s+STEPS\s+UPDATED\s+SESSION$/)
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(["run-live", "run-done"])
    // Aligned: every row's STATE column starts where the header's does.
    const at = lines[0]?.indexOf("STATE") ?? -1
    expect(lines.slice(1).map((l) => l.slice(at).split(/\s+/)[0])).toEqual(["running", "completed"])
    expect(table.stdout).toMatch(/\d+s ago|now/)
    expect(table.stdout).not.toContain("\u001b[")

    const completed = await cli(["runs", "--db", healthyDb, "--state", "completed", "--json"])
    expect(completed.code).toBe(0)
    const parsed = JSON.parse(completed.stdout)
    expect(parsed.map((r: { runId: string }) => r.runId)).toEqual(["run-done"])
    expect(parsed[0].result).toEqual({ greeting: "hi" })
    expect(parsed[0].stepCount).toBe(2)

    const bySession = await cli(["runs", "--db", healthyDb, "--session", "session-b", "--json"])
    expect(JSON.parse(bySession.stdout).map((r: { runId: string }) => r.runId)).toEqual(["run-live"])
    // A unique prefix of a session ID stands for it, as a short ID does for a run; a shared one
    // is refused with the sessions it matches.
    const lone = join(dir, "lone-session.db")
    const copy = new BetterSqlite(healthyDb)
    await copy.backup(lone)
    copy.close()
    const edit = new BetterSqlite(lone)
    edit
      .prepare("UPDATE workflow_runs SET target_session_id = 'lone-session-42' WHERE run_id = 'run-live'")
      .run()
    edit.close()
    const byPrefix = await cli(["runs", "--db", lone, "--session", "lone", "--json"])
    expect(JSON.parse(byPrefix.stdout).map((r: { runId: string }) => r.runId)).toEqual(["run-live"])
    const shared = await cli(["intents", "--db", healthyDb, "--session", "session-"])
    expect(shared.code).toBe(2)
    expect(shared.stderr).toContain(
      'the session prefix "session-" is ambiguous: it matches session-a, session-b'
    )
  })

  it("intents: stage per intent; --pending/--eligible/--resolved filter and exclude each other", async () => {
    const all = await cli(["intents", "--db", healthyDb])
    expect(all.code).toBe(0)
    expect(all.stdout).toMatch(/^INTENT\s+RUN\s+CAUSE\s+NODE\s+STAGE\s+REQUESTED$/m)
    expect(all.stdout).toContain("resolved (fallback)")
    expect(all.stdout).toContain("eligible")

    const eligible = JSON.parse((await cli(["intents", "--db", healthyDb, "--eligible", "--json"])).stdout)
    expect(eligible.map((i: { runId: string }) => i.runId)).toEqual(["run-live"])
    const resolved = JSON.parse((await cli(["intents", "--db", healthyDb, "--resolved", "--json"])).stdout)
    expect(resolved.map((i: { intentId: string }) => i.intentId)).toEqual([resolvedIntentId])
    const byRun = JSON.parse(
      (await cli(["intents", "--db", healthyDb, "--run", "run-done", "--json"])).stdout
    )
    expect(byRun).toHaveLength(1)

    const both = await cli(["intents", "--db", healthyDb, "--pending", "--resolved"])
    expect(both.code).toBe(2)
    expectOneLine(both)
    expect(both.stderr).toContain("choose one of --pending, --eligible and --resolved")
  })

  it("show: a run's steps and intents; an intent's life and how it was resolved", async () => {
    const run = await cli(["show", "run-done", "--db", healthyDb])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/state:\s+completed/)
    expect(run.stdout).toMatch(/1\s+hello\s+timed_out/)
    expect(run.stdout).toMatch(/2\s+bye\s+ok/)
    // The timeout in the one duration format, from the step's limit; steps counted as settled.
    expect(run.stdout).toContain("timed out after 1s")
    expect(run.stdout).toMatch(/steps:\s+2 settled \(the limit is 10\)/)
    // The run's intents in its short form (a prefix of the digest).
    expect(run.stdout).toContain(
      resolvedIntentId.slice("deferred-turn:".length, "deferred-turn:".length + 12)
    )

    const intent = await cli(["show", resolvedIntentId, "--db", healthyDb])
    expect(intent.code).toBe(0)
    expect(intent.stdout).toMatch(/created:\s+\d{4}-/)
    expect(intent.stdout).toMatch(/eligible:\s+\d{4}-/)
    expect(intent.stdout).toMatch(/resolved:\s+\d{4}-.* by fallback \(message m-1\)/)

    const json = JSON.parse((await cli(["show", "run-done", "--db", healthyDb, "--json"])).stdout)
    expect(json.steps.map((s: { outcome: string }) => s.outcome)).toEqual(["timed_out", "ok"])
    expect(json.steps[1].output).toEqual({ greeting: "hi" })

    const missing = await cli(["show", "no-such-id", "--db", healthyDb])
    expect(missing.code).toBe(1)
    expectOneLine(missing)
    expect(missing.stderr).toContain("no turn intent or run with ID no-such-id")
  })

  it("show: a run's restart chain, from the parent and from the restart", async () => {
    const chainDb = join(dir, "chain.db")
    await Effect.runPromise(seedChain(chainDb))
    const parent = await cli(["show", "run-first", "--db", chainDb])
    expect(parent.code).toBe(0)
    expect(parent.stdout).toMatch(/restart chain\nrestarted as run run-second/)
    const restart = await cli(["show", "run-second", "--db", chainDb])
    expect(restart.stdout).toContain("launched by restart · restart 1/3 of chain root run-first")
    const json = JSON.parse((await cli(["show", "run-second", "--db", chainDb, "--json"])).stdout)
    expect(json.restartChain).toHaveLength(1)
  })

  it("doctor: exit 0 on a healthy database, and reading changes nothing", async () => {
    const before = fileHash(healthyDb)
    const result = await cli(["doctor", "--db", healthyDb])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("healthy")
    expect(result.stdout).not.toContain("PROBLEM")
    expect(fileHash(healthyDb)).toBe(before)
  })

  it("doctor: explains stranded intents, expired claims, stalled runs and legacy rows; deletes nothing", async () => {
    // A legacy alpha table with one undelivered launch_failure (the current schema forbids the kind).
    const raw = new BetterSqlite(staleDb)
    raw.exec(`DROP TABLE workflow_notifications;
      CREATE TABLE workflow_notifications (notification_id TEXT PRIMARY KEY, run_id TEXT, target_session_id TEXT,
        kind TEXT, payload_json TEXT, created_at TEXT, delivered_at TEXT);
      INSERT INTO workflow_notifications VALUES ('n1', 'r', 's', 'launch_failure', '{}', 'x', NULL);`)
    raw.close()
    const result = await cli(["doctor", "--db", staleDb])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("1 pending launch_failure notification(s)")
    expect(result.stdout).toContain("move")
    expect(result.stdout).toMatch(/1 turn intent waited more than 10m/)
    expect(result.stdout).toContain("run-lost")
    // Retired (the user cancelled its run), so not reported as stranded.
    expect(result.stdout).not.toContain("run-user-cancelled")
    expect(result.stdout).toMatch(/delivery claim whose lease expired[\s\S]*run-claimed/)
    expect(result.stdout).toMatch(
      /parked or orphaned[\s\S]*run-abandoned: greet at hello, orphaned \(owner session gone\)/
    )
    expect(result.stdout).toContain("pi --session s-3 in the project directory")
    expect(result.stdout).toContain("/workflow resume run-abandoned")
    // Singular agreement: one of each.
    expect(result.stdout).toContain("1 run has been parked or orphaned for more than 10m")
    expect(result.stdout).toContain("1 turn intent still carries a delivery claim")
    const json = JSON.parse((await cli(["doctor", "--db", staleDb, "--json"])).stdout)
    expect(json.healthy).toBe(false)
    expect(json.findings.filter((f: { healthy: boolean }) => !f.healthy)).toHaveLength(4)
    const check = new BetterSqlite(staleDb, { readonly: true })
    expect(check.prepare("SELECT count(*) AS n FROM workflow_notifications").get()).toEqual({ n: 1 })
    check.close()
  })

  it("schema versions: an unversioned file is older (exit 2), a newer release's refused; neither changed", async () => {
    // A file of the release before schema versions: today's tables, no effect_sql_migrations.
    const unversioned = join(dir, "unversioned.db")
    const old = new BetterSqlite(unversioned)
    for (const statement of controllerSchemaStatements) old.exec(statement)
    old.exec(`INSERT INTO pi_workflows_metadata VALUES ('schema', '${CONTROLLER_SCHEMA}')`)
    old.close()
    const newer = join(dir, "newer.db")
    await Effect.runPromise(withStores(newer, Effect.void))
    const raw = new BetterSqlite(newer)
    raw.exec("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (99, 'from_a_later_release')")
    raw.close()
    for (const [path, expected] of [
      [unversioned, "older schema version"],
      [newer, "written by a newer release"]
    ] as const) {
      const before = fileHash(path)
      for (const command of ["doctor", "runs"]) {
        const result = await cli([command, "--db", path])
        expect(result.code, `${command} ${expected}`).toBe(2)
        expectOneLine(result)
        expect(result.stderr).toContain(expected)
      }
      expect(fileHash(path)).toBe(before)
    }
  })

  it("never blocks a live writer: reads while another process holds a write transaction", async () => {
    const writer = new BetterSqlite(healthyDb)
    try {
      writer.exec("BEGIN IMMEDIATE")
      writer.exec("UPDATE workflow_runs SET parked_reason = 'uncommitted' WHERE run_id = 'run-live'")
      const result = await cli(["runs", "--db", healthyDb, "--json"])
      expect(result.code).toBe(0)
      // The last committed state, not the writer's uncommitted change.
      expect(JSON.parse(result.stdout).map((r: { parkedReason: unknown }) => r.parkedReason)).toEqual([
        null,
        null
      ])
    } finally {
      if (writer.inTransaction) writer.exec("ROLLBACK")
      writer.close()
    }
  })

  it("says the database is busy when another process holds it exclusively", async () => {
    const holder = new BetterSqlite(healthyDb)
    try {
      holder.pragma("locking_mode = EXCLUSIVE")
      holder.exec("BEGIN EXCLUSIVE")
      const result = await cli(["runs", "--db", healthyDb])
      expect(result.code).toBe(3)
      expectOneLine(result)
      expect(result.stderr).toContain("the database is busy")
    } finally {
      if (holder.inTransaction) holder.exec("ROLLBACK")
      holder.close()
    }
  })

  it("finds the database like the extension does: PI_WORKFLOWS_DB", async () => {
    const result = await cli(["runs", "--json"], { PI_WORKFLOWS_DB: healthyDb })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toHaveLength(2)
  })

  // Reading a PostgreSQL store is test/cli/cli-pg.test.ts (postgres project); here no server answers.
  it("a PostgreSQL URL no server answers (PI_WORKFLOWS_DB or --db): one clear line, exit 2", async () => {
    const url = "postgresql://pi@127.0.0.1:1/pw"
    for (const result of [
      await cli(["runs"], { PI_WORKFLOWS_DB: url }),
      await cli(["doctor", "--db", url])
    ]) {
      expect(result.code).toBe(2)
      expectOneLine(result)
      expect(result.stderr).toContain("cannot connect to PostgreSQL at postgresql://pi@127.0.0.1:1/pw")
    }
  })

  it("bad input: one clear line and a non-zero exit, never a stack trace", async () => {
    const notDb = join(dir, "notes.txt")
    writeFileSync(notDb, "these are not the tables you are looking for\n".repeat(100))
    const otherDb = join(dir, "other.db")
    const other = new BetterSqlite(otherDb)
    other.exec("CREATE TABLE t (x)")
    other.close()
    const wrongSchema = join(dir, "wrong-schema.db")
    const wrong = new BetterSqlite(wrongSchema)
    wrong.exec("CREATE TABLE pi_workflows_metadata (key TEXT PRIMARY KEY, value TEXT)")
    wrong.exec("INSERT INTO pi_workflows_metadata VALUES ('schema', 'pi-workflows.controller-store.v0')")
    wrong.close()
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string | RegExp]> = [
      [["runs", "--bogus"], "--bogus"],
      [["frobnicate"], /frobnicate|Invalid subcommand/i],
      [["runs", "--limit", "0", "--db", healthyDb], "--limit must be from 1 to 1000"],
      [["runs", "--db", join(dir, "missing.db")], "no controller database at"],
      [["runs", "--db", notDb], "not a database"],
      [["runs", "--db", otherDb], "is not a pi-workflow-turns database"],
      [["doctor", "--db", wrongSchema], 'has schema "pi-workflows.controller-store.v0"'],
      [["runs"], "no controller database at"]
    ]
    for (const [args, expected] of cases) {
      const result = await cli(args)
      expect(result.code, args.join(" ")).not.toBe(0)
      expectOneLine(result)
      if (typeof expected === "string") expect(result.stderr).toContain(expected)
      else expect(result.stderr).toMatch(expected)
    }
    // Nothing was created where the extension would keep the database.
    expect(() => readFileSync(join(dir, "missing.db"))).toThrow()
  })
})
