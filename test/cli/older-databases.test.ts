/**
 * Every command of the built bin on a database this release cannot read as it is: an alpha file
 * with pending `launch_failure` rows (with or without today's tables), a versioned file that lost
 * a table, an older schema version, a foreign SQLite file, an empty file. Each answer is one line
 * naming what to do (reset, upgrade, or "not a controller database"), the documented exit code,
 * and the file is left exactly as it was (bytes, mtime, no -wal/-shm left behind).
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import BetterSqlite from "better-sqlite3"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../../src/store/schema.ts"
import { CONTROLLER_TABLES, readability } from "../../src/store/operator-reads.ts"
import { expectOneLine, runCli } from "./cli-support.ts"
import { seedHealthy, withStores } from "./seed-sqlite.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"] as string

let dir = ""
const cli = (args: ReadonlyArray<string>) => runCli(join(root, bin), dir, args)

/** The alpha notifications table (no CHECK on kind) with one undelivered launch_failure. */
const ALPHA_NOTIFICATIONS = `CREATE TABLE workflow_notifications (notification_id TEXT PRIMARY KEY,
    run_id TEXT, target_session_id TEXT, kind TEXT, payload_json TEXT, created_at TEXT, delivered_at TEXT);
  INSERT INTO workflow_notifications VALUES ('n1', 'r', 's', 'launch_failure', '{}', 'x', NULL);`

const MARKER = `CREATE TABLE pi_workflows_metadata (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT;
  INSERT INTO pi_workflows_metadata VALUES ('schema', '${CONTROLLER_SCHEMA}');`

const seedRaw = (name: string, build: (db: BetterSqlite.Database) => void) => {
  const path = join(dir, name)
  const db = new BetterSqlite(path)
  build(db)
  db.close()
  return path
}

/**
 * What a reader could change: the bytes and mtime of the file, and its write-ahead log. A
 * read-only SQLite connection to a WAL-mode file leaves an empty `-wal` (and the `-shm` index)
 * beside it, as every SQLite reader does; nothing may be written to the log.
 */
const snapshot = (path: string) => {
  const wal = `${path}-wal`
  return {
    hash: createHash("sha256").update(readFileSync(path)).digest("hex"),
    mtimeMs: statSync(path).mtimeMs,
    walBytes: readdirSync(dir).includes(wal.slice(dir.length + 1)) ? statSync(wal).size : 0,
    others: readdirSync(dir)
      .filter((entry) => entry.startsWith(path.slice(dir.length + 1)))
      .filter((entry) => !entry.endsWith("-wal") && !entry.endsWith("-shm"))
  }
}

const COMMANDS: ReadonlyArray<ReadonlyArray<string>> = [
  ["doctor"],
  ["doctor", "--json"],
  ["runs"],
  ["intents"],
  ["show", "run-1"]
]

const RESET = /To reset the controller store: stop Pi, move .* aside/

interface Case {
  readonly name: string
  readonly path: () => string
  /** What the one line says. */
  readonly says: RegExp
  /** Doctor's exit code (1 when it found a problem with a named fix); other commands exit 2. */
  readonly doctorCode: number
}

const paths = new Map<string, string>()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-older-"))
  // The file: the metadata and the alpha notifications table, nothing else.
  paths.set(
    "alpha-partial",
    seedRaw("alpha-partial.db", (db) => db.exec(MARKER + ALPHA_NOTIFICATIONS))
  )
  // An alpha file with every table of today (unversioned) and a pending launch_failure.
  paths.set(
    "alpha-full",
    seedRaw("alpha-full.db", (db) => {
      for (const statement of controllerSchemaStatements) {
        if (!statement.includes("workflow_notifications")) db.exec(statement)
      }
      db.exec(`INSERT INTO pi_workflows_metadata VALUES ('schema', '${CONTROLLER_SCHEMA}');`)
      db.exec(ALPHA_NOTIFICATIONS)
    })
  )
  // A store-made file (every version recorded, WAL mode) that has since lost its turn intents table.
  const damaged = join(dir, "damaged.db")
  await Effect.runPromise(withStores(damaged, seedHealthy))
  const raw = new BetterSqlite(damaged)
  raw.exec("DROP TABLE workflow_turn_intents")
  raw.close()
  paths.set("damaged", damaged)
  // A file of the release before schema versions, no legacy rows: Pi upgrades it in place.
  paths.set(
    "unversioned",
    seedRaw("unversioned.db", (db) => {
      for (const statement of controllerSchemaStatements) db.exec(statement)
      db.exec(`INSERT INTO pi_workflows_metadata VALUES ('schema', '${CONTROLLER_SCHEMA}')`)
    })
  )
  paths.set(
    "foreign",
    seedRaw("foreign.db", (db) => db.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x')"))
  )
  const empty = join(dir, "empty.db")
  writeFileSync(empty, "")
  paths.set("empty", empty)
  const text = join(dir, "text.db")
  writeFileSync(text, "not a database\n".repeat(200))
  paths.set("text", text)
})

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

const path = (name: string) => () => {
  const found = paths.get(name)
  if (found === undefined) throw new Error(`no seeded database ${name}`)
  return found
}

const cases: ReadonlyArray<Case> = [
  {
    name: "alpha-partial",
    path: path("alpha-partial"),
    says: /1 pending launch_failure notification\(s\).*To reset the controller store/,
    doctorCode: 1
  },
  {
    name: "alpha-full",
    path: path("alpha-full"),
    says: /1 pending launch_failure notification\(s\).*To reset the controller store/,
    doctorCode: 1
  },
  {
    name: "damaged",
    path: path("damaged"),
    says: /lacks the table\(s\) workflow_turn_intents.*To reset the controller store/,
    doctorCode: 2
  },
  {
    name: "unversioned",
    path: path("unversioned"),
    says: /older schema version .*Start Pi .* once to upgrade it/,
    doctorCode: 2
  },
  {
    name: "foreign",
    path: path("foreign"),
    says: /is not a pi-workflow-turns database/,
    doctorCode: 2
  },
  { name: "empty", path: path("empty"), says: /is not a pi-workflow-turns database/, doctorCode: 2 },
  { name: "text", path: path("text"), says: /is not a pi-workflow-turns database/, doctorCode: 2 }
]

describe("every command on a database this release cannot read as it is", () => {
  for (const c of cases) {
    it(`${c.name}: one line, the documented exit code, the file unchanged`, async () => {
      const db = c.path()
      const before = snapshot(db)
      for (const command of COMMANDS) {
        const result = await cli([...command, "--db", db])
        const shown = `${c.name}: ${command.join(" ")}`
        expect(result.code, `${shown}: ${result.stderr}`).toBe(command[0] === "doctor" ? c.doctorCode : 2)
        expect(result.stdout, shown).toBe("")
        expectOneLine(result)
        expect(result.stderr, shown).toMatch(c.says)
        expect(result.stderr, shown).not.toMatch(/SqliteError|no such table|SQLITE_/)
        if (RESET.test(result.stderr)) expect(result.stderr).toContain(db)
      }
      expect(snapshot(db), c.name).toEqual(before)
    })
  }
})

describe("the structure the refusal is decided from", () => {
  it("CONTROLLER_TABLES are the tables a fresh store has", async () => {
    const fresh = join(dir, "fresh.db")
    await Effect.runPromise(withStores(fresh, Effect.void))
    const raw = new BetterSqlite(fresh, { readonly: true })
    const tables = raw
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'effect_sql_migrations'")
      .pluck()
      .all()
    raw.close()
    expect([...tables].sort()).toEqual([...CONTROLLER_TABLES].sort())
  })

  it("legacy rows call for the reset only where Pi refuses the file; a lost table always does", () => {
    const complete = { missingTables: [], legacyPending: 0, behind: false }
    expect(readability(complete)._tag).toBe("Readable")
    // A complete file at this version: doctor lists the rows among its findings.
    expect(readability({ ...complete, legacyPending: 2 })._tag).toBe("Readable")
    expect(readability({ ...complete, legacyPending: 2, behind: true })).toEqual({
      _tag: "LegacyLaunchFailures",
      pending: 2
    })
    expect(readability({ ...complete, legacyPending: 1, missingTables: ["workflow_runs"] })._tag).toBe(
      "LegacyLaunchFailures"
    )
    expect(readability({ ...complete, missingTables: ["workflow_runs"] })).toEqual({
      _tag: "MissingTables",
      missing: ["workflow_runs"]
    })
  })
})
