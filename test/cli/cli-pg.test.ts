/**
 * The operator CLI on PostgreSQL (the `postgres` project, against the run's throwaway cluster):
 * the built bin, `--db postgres://…` or PI_WORKFLOWS_DB=postgres://…, reading only — no
 * migration, the schema version checked, every transaction read-only — and one line with exit 2
 * when the server cannot be reached or the database is not a controller database. `serve` too:
 * its page's API over HTTP on a PostgreSQL database.
 *
 * The bin is built into this file's temp directory (its `node_modules` links to the package's),
 * so it never races the `sqlite` project's build of dist/.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import { layerStoresPg } from "../../src/store/pg/database-pg.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { freshPgUrl, pgQuery } from "../support/backend.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { expectOneLine, newRun, resolvedIntent, runCli } from "./cli-support.ts"
import { SECRET, seedTimeline } from "../serve/seed-timeline.ts"
import { startServe } from "../serve/serve-process.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

let dir = ""
let url = ""

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runCli(join(dir, "dist", "cli.js"), dir, args, env)

/** A completed run with one step and its resolved intent, and a running run renewed by its runner. */
const seed = (at: string) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(layerStoresPg({ url: at })), (context) =>
      Effect.gen(function* () {
        const runs = Context.get(context, RunStore)
        const intents = Context.get(context, TurnIntentStore)
        yield* runs.reserve(newRun("run-done", "session-a"))
        yield* runs.claim({ runId: "run-done", token: "t1", leaseMs: 60_000, mode: "activate" })
        const fence = { runId: "run-done", token: "t1" }
        yield* runs.startStep(fence, { nodeId: "hello", attemptId: "att-1" })
        yield* runs.settle(fence, {
          attemptId: "att-1",
          step: { _tag: "Outcome", outcome: "ok", output: { greeting: "hi" }, timeoutMs: null },
          next: { _tag: "End", state: "completed", result: { greeting: "hi" } }
        })
        yield* resolvedIntent(
          intents,
          sampleIntent({ runId: "run-done", targetSessionId: "session-a", sourceEventId: "ev-1" })
        )
        yield* runs.reserve(newRun("run-live", "session-b"))
        yield* runs.claim({ runId: "run-live", token: "t2", leaseMs: 3_600_000, mode: "activate" })
      })
    )
  )

/** Every row of the controller tables: equal before and after proves the CLI wrote nothing. */
const snapshot = async (at: string) => ({
  runs: await pgQuery(at, "SELECT * FROM workflow_runs ORDER BY run_id"),
  steps: await pgQuery(at, "SELECT * FROM workflow_steps ORDER BY run_id, seq"),
  intents: await pgQuery(at, "SELECT * FROM workflow_turn_intents ORDER BY intent_id"),
  tables: await pgQuery(
    at,
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
  )
})

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-pg-"))
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
  execFileSync(
    process.execPath,
    [join(root, "scripts", "build.mjs"), "--only=extension", `--outdir=${join(dir, "dist")}`],
    { cwd: root, stdio: "ignore" }
  )
  url = await Effect.runPromise(freshPgUrl)
  await Effect.runPromise(seed(url))
})

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

describe("the CLI on PostgreSQL", () => {
  it("runs, intents and show read the database named by --db; nothing is written", async () => {
    const before = await snapshot(url)
    const runs = await cli(["runs", "--json", "--db", url])
    expect(runs.stderr).toBe("")
    expect(runs.code).toBe(0)
    const listed: ReadonlyArray<{ readonly runId: string; readonly state: string }> = JSON.parse(runs.stdout)
    expect(listed.map((r) => [r.runId, r.state])).toEqual([
      ["run-live", "running"],
      ["run-done", "completed"]
    ])
    const intents = await cli(["intents", "--resolved", "--db", url])
    expect(intents.code).toBe(0)
    expect(intents.stdout).toMatch(/resolved \(fallback\)/)
    const show = await cli(["show", "run-done", "--json", "--db", url])
    expect(show.code).toBe(0)
    const page: { readonly steps: ReadonlyArray<{ readonly nodeId: string }> } = JSON.parse(show.stdout)
    expect(page.steps.map((s) => s.nodeId)).toEqual(["hello"])
    expect(await snapshot(url)).toEqual(before)
  })

  it("show takes a unique ID prefix on PostgreSQL too; an ambiguous one is exit 2", async () => {
    const run = await cli(["show", "run-d", "--db", url])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/run:\s+run-done/)
    const ambiguous = await cli(["show", "run-", "--db", url])
    expect(ambiguous.code).toBe(2)
    expectOneLine(ambiguous)
    expect(ambiguous.stderr).toContain(
      'the ID prefix "run-" is ambiguous: it matches run run-done, run run-live'
    )
  })

  it("serve reads PostgreSQL too: the runs and a run's timeline over HTTP, no secret, nothing written", async () => {
    const at = await Effect.runPromise(freshPgUrl)
    await Effect.runPromise(
      Effect.scoped(Effect.provide(seedTimeline, Layer.fresh(layerStoresPg({ url: at }))))
    )
    const before = await snapshot(at)
    const served = await startServe(at, dir, join(dir, "dist", "cli.js"))
    try {
      const get = async (path: string, token: string | null) => {
        const answer = await fetch(`${served.base}${path}`, {
          headers: token === null ? {} : { Authorization: `Bearer ${token}` }
        })
        return { status: answer.status, body: await answer.text() }
      }
      expect((await get("/api/runs", null)).status).toBe(401)
      const runs = await get("/api/runs", served.token)
      expect(runs.status).toBe(200)
      const listed: { readonly runs: ReadonlyArray<{ readonly id: string }> } = JSON.parse(runs.body)
      expect(listed.runs.map((r) => r.id)).toEqual(["run-long", "run-ask", "run-deploy-2", "run-deploy"])
      const steps = await get("/api/steps?id=run-deploy", served.token)
      const page: { readonly items: ReadonlyArray<{ readonly node: string; readonly outcome: string }> } =
        JSON.parse(steps.body)
      // The stored visits in order; the one the takeover closed has no outcome of its own.
      const stored = await pgQuery(
        at,
        "SELECT node_id FROM workflow_steps WHERE run_id = 'run-deploy' ORDER BY seq"
      )
      expect(page.items.map((step) => step.node)).toEqual(stored.map((row) => String(row.node_id)))
      expect(page.items.map((step) => step.outcome)).toEqual(["ok", "superseded", "failed"])
      for (const body of [runs.body, steps.body]) expect(body).not.toContain(SECRET)
    } finally {
      expect(await served.stop()).toBe(0)
    }
    expect(await snapshot(at)).toEqual(before)
  })

  it("doctor via PI_WORKFLOWS_DB=postgres://…: healthy, exit 0, the URL shown", async () => {
    const doctor = await cli(["doctor"], { PI_WORKFLOWS_DB: url })
    expect(doctor.stderr).toBe("")
    expect(doctor.code).toBe(0)
    expect(doctor.stdout).toMatch(/^database postgresql:\/\//)
    expect(doctor.stdout).toMatch(/healthy\n$/)
  })

  it("doctor finds a run whose runner stopped renewing (exit 1)", async () => {
    const stale = await Effect.runPromise(freshPgUrl)
    await Effect.runPromise(seed(stale))
    await pgQuery(stale, "UPDATE workflow_runs SET claim_expires_at = 1 WHERE run_id = 'run-live'")
    const doctor = await cli(["doctor", "--db", stale])
    expect(doctor.code).toBe(1)
    expect(doctor.stdout).toMatch(/run-live: greet/)
  })

  it("an empty database: one line, exit 2, and no schema is created (no migration)", async () => {
    const empty = await Effect.runPromise(freshPgUrl)
    const doctor = await cli(["doctor", "--db", empty])
    expectOneLine(doctor)
    expect(doctor.code).toBe(2)
    expect(doctor.stderr).toMatch(/not a pi-workflow-turns database/)
    expect(
      await pgQuery(
        empty,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
      )
    ).toEqual([])
  })

  it("another schema version: one line naming it, exit 2", async () => {
    const other = await Effect.runPromise(freshPgUrl)
    await Effect.runPromise(seed(other))
    await pgQuery(
      other,
      "UPDATE pi_workflows_metadata SET value = 'pi-workflow-turns/999' WHERE key = 'schema'"
    )
    const runs = await cli(["runs", "--db", other])
    expectOneLine(runs)
    expect(runs.code).toBe(2)
    expect(runs.stderr).toMatch(/pi-workflow-turns\/999/)
  })

  it("a database that lost a controller table: every command says how to reset it, exit 2, nothing changed", async () => {
    const damaged = await Effect.runPromise(freshPgUrl)
    await Effect.runPromise(seed(damaged))
    await pgQuery(damaged, "DROP TABLE workflow_turn_intents")
    const before = await pgQuery(
      damaged,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
    )
    for (const command of [["doctor"], ["runs"], ["intents"], ["show", "run-done"]]) {
      const result = await cli([...command, "--db", damaged])
      expectOneLine(result)
      expect(result.code, command[0]).toBe(2)
      expect(result.stderr).toMatch(
        /lacks the table\(s\) workflow_turn_intents.*To reset the controller store/
      )
      expect(result.stderr).not.toMatch(/does not exist/)
    }
    expect(
      await pgQuery(
        damaged,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
      )
    ).toEqual(before)
  })

  it("a server that cannot be reached: one line, exit 2, the password never shown", async () => {
    const nowhere = `postgresql://pwt:secret@localhost/postgres?host=${encodeURIComponent(join(dir, "no-server"))}`
    const runs = await cli(["runs", "--db", nowhere])
    expectOneLine(runs)
    expect(runs.code).toBe(2)
    expect(runs.stderr).toMatch(/cannot connect to PostgreSQL/)
    expect(runs.stderr).not.toMatch(/secret/)
  })

  it("the read-only open refuses writes: every transaction is read-only", async () => {
    const failure = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(DatabasePg.layer({ url, readonly: true }))
          const sql = Context.get(context, SqlClient.SqlClient)
          return yield* Effect.flip(sql`DELETE FROM workflow_runs`)
        })
      )
    )
    expect(String(failure.cause)).toMatch(/read-only transaction/)
    expect(await pgQuery(url, "SELECT count(*)::int AS n FROM workflow_runs")).toEqual([{ n: 2 }])
  })
})
