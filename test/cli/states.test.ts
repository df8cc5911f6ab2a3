/**
 * Truthful states in the operator CLI (the built bin, on a database the real stores wrote): a
 * run stored `running` is shown as what it is (parked, orphaned, held), every step shows its
 * limit and the step in flight its deadline, and `doctor` flags runs stalled longer than
 * `--stale-after` with the commands that recover them.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "./cli-support.ts"
import { seedStates, withStores } from "./seed-sqlite.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"] as string

let dir = ""
let db = ""
const cli = (args: ReadonlyArray<string>) => runCli(join(root, bin), dir, [...args, "--db", db])

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-states-"))
  db = join(dir, "states.db")
  await Effect.runPromise(withStores(db, seedStates))
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The STATE cell of each row of a `runs` table, by run ID. */
const statesOf = (stdout: string): Record<string, string> => {
  const [header = "", ...rows] = stdout.trimEnd().split("\n")
  const from = header.indexOf("STATE")
  const to = header.indexOf("NODE")
  return Object.fromEntries(rows.map((row) => [row.split(/\s+/)[0], row.slice(from, to).trim()]))
}

describe("truthful states (the bin)", () => {
  it("runs: parked, orphaned and held runs are never shown as running", async () => {
    const table = await cli(["runs"])
    expect(table.code).toBe(0)
    expect(statesOf(table.stdout)).toEqual({
      "run-flight": "running",
      "run-held": "held (Escape)",
      "run-orphan": "orphaned (owner session gone)",
      "run-parked": "parked (shutdown)",
      "run-waiting": "waiting for agent (reminder 2 of 2)"
    })
    const json = JSON.parse((await cli(["runs", "--json"])).stdout)
    expect(
      json.map((r: { runId: string; state: string; conditionKind: string }) => [
        r.runId,
        r.state,
        r.conditionKind
      ])
    ).toEqual([
      ["run-waiting", "running", "waitingForAgent"],
      ["run-flight", "running", "running"],
      ["run-held", "waiting", "held"],
      ["run-orphan", "running", "orphaned"],
      ["run-parked", "running", "parked"]
    ])
  })

  it("runs --state: stored states filter as stored; parked, orphaned and held filter by condition", async () => {
    const ids = async (state: string) =>
      JSON.parse((await cli(["runs", "--state", state, "--json"])).stdout).map(
        (r: { runId: string }) => r.runId
      )
    expect(await ids("running")).toEqual(["run-waiting", "run-flight", "run-orphan", "run-parked"])
    expect(await ids("parked")).toEqual(["run-parked"])
    expect(await ids("orphaned")).toEqual(["run-orphan"])
    expect(await ids("held")).toEqual(["run-held"])
    const bad = await cli(["runs", "--state", "stuck"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("waiting, completed, failed, timed_out, cancelled, parked, orphaned, held")
  })

  it("show: the step in flight has its limit and its deadline, absolute and from now", async () => {
    const flight = await cli(["show", "run-flight"])
    expect(flight.code).toBe(0)
    expect(flight.stdout).toMatch(/state:\s+running\n/)
    expect(flight.stdout).toMatch(/deadline:\s+\d{4}-\d\d-\d\dT\S+Z \(in (7h 59m|8h)\)/)
    expect(flight.stdout).toMatch(/^#\s+NODE\s+OUTCOME\s+STARTED\s+TOOK\s+LIMIT\s+DEADLINE\s+NOTE$/m)
    expect(flight.stdout).toMatch(/^1\s+hello\s+in flight\s+(now|\d+s ago)\s+-\s+8h\s+in (7h 59m|8h)$/m)
    // The orphaned run's step still runs against its deadline (a takeover continues it).
    const orphan = await cli(["show", "run-orphan"])
    expect(orphan.stdout).toMatch(/state:\s+orphaned \(owner session gone\)/)
    const waiting = await cli(["show", "run-waiting"])
    expect(waiting.stdout).toMatch(/state:\s+waiting for agent \(reminder 2 of 2\)\n/)
    expect(orphan.stdout).toMatch(/^1\s+hello\s+in flight\s+1h( 1m)? ago\s+-\s+8h\s+in 6h 5\dm$/m)
    // A parked step shows its limit; no deadline applies until a resume starts a fresh one.
    const parked = await cli(["show", "run-parked"])
    expect(parked.stdout).toMatch(/state:\s+parked \(shutdown\)/)
    expect(parked.stdout).toMatch(/deadline:\s+- \(no step in flight\)/)
    expect(parked.stdout).toMatch(
      /^1\s+hello\s+interrupted\s+2h ago\s+(now|\d+ms)\s+8h\s+-\s+parked: shutdown$/m
    )
  })

  it("doctor: flags runs parked or orphaned past --stale-after with their recovery commands; never healthy then", async () => {
    const found = await cli(["doctor"])
    expect(found.code).toBe(1)
    expect(found.stdout).not.toMatch(/^healthy$/m)
    expect(found.stdout).toContain("PROBLEM 2 runs have been parked or orphaned for more than 10m")
    expect(found.stdout).toContain(
      "run-parked: greet at hello, parked (shutdown) since 2h ago, session s-parked; " +
        "recover: pi --session s-parked in the project directory (session start continues the run), " +
        "or type /workflow resume run-parked in Pi there"
    )
    expect(found.stdout).toMatch(/run-orphan: greet at hello, orphaned \(owner session gone\) since 1h ago/)
    // The user's hold and the live run are not stalled.
    expect(found.stdout).not.toContain("run-held")
    expect(found.stdout).not.toContain("run-flight")
    expect(found.stdout).not.toContain("run-waiting")
    const json = JSON.parse((await cli(["doctor", "--json"])).stdout)
    expect(json.healthy).toBe(false)
    expect(json.findings.find((f: { check: string }) => f.check === "stalledRuns").items).toHaveLength(2)
    // Past the threshold only: at 3h neither has stalled long enough.
    const later = await cli(["doctor", "--stale-after", "3h"])
    expect(later.code).toBe(0)
    expect(later.stdout).toMatch(/no run has been parked or orphaned for more than 3h\n[\s\S]*^healthy$/m)
    const bad = await cli(["doctor", "--stale-after", "soon"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("--stale-after must be a duration of at least 1s")
  })
})
