/**
 * Waiting checkpoints in the operator CLI (the built bin, on a SQLite file the real stores and
 * the real engine wrote): `runs --state waiting` lists runs at a checkpoint (not held or paused
 * ones, which `--state held` and `--state paused` list), `show` says what a run waits for, since
 * when, its deadline and how to answer (the prompt's secret never printed), and who answered an
 * ended wait; `doctor` lists waits older than `--stale-after` as long waits, not as a failure.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { diagnose } from "../../src/cli/doctor.ts"
import { questionLine } from "../../src/cli/waits.ts"
import type { RunRecord } from "../../src/store/run-store.ts"
import type { WaitRecord } from "../../src/store/run-waits.ts"
import { unchecked } from "../support/fixtures.ts"
import { expectOneLine, runCli } from "./cli-support.ts"
import { withStores } from "./seed-sqlite.ts"
import { engineWait, SECRET, seedWaits } from "./seed-waits.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"] as string

let dir = ""
let db = ""
let engineRun = { runId: "", requestId: "" }
const cli = (args: ReadonlyArray<string>) => runCli(join(root, bin), dir, [...args, "--db", db])

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-waits-"))
  db = join(dir, "waits.db")
  await Effect.runPromise(withStores(db, seedWaits))
  engineRun = await Effect.runPromise(engineWait(db))
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

const ids = async (state: string): Promise<ReadonlyArray<string>> => {
  const result = await cli(["runs", "--state", state, "--json"])
  expect(result.code, result.stderr).toBe(0)
  return JSON.parse(result.stdout).map((r: { runId: string }) => r.runId)
}

/** The STATE cell of each row of a `runs --wide` table, by run ID. */
const statesOf = (stdout: string): Record<string, string> => {
  const [header = "", ...rows] = stdout.trimEnd().split("\n")
  const from = header.indexOf("STATE")
  const to = header.indexOf("NODE")
  return Object.fromEntries(rows.map((row) => [row.split(/\s+/)[0], row.slice(from, to).trim()]))
}

describe("waiting checkpoints in the CLI (the bin)", () => {
  it("runs --state waiting lists the runs at a checkpoint; held and paused runs have their own choices", async () => {
    expect([...(await ids("waiting"))].sort()).toEqual([engineRun.runId, "run-ask", "run-fresh"].sort())
    expect(await ids("paused")).toEqual(["run-paused"])
    expect(await ids("held")).toEqual(["run-held"])
    const table = await cli(["runs", "--state", "waiting", "--wide"])
    expect(table.code).toBe(0)
    expect(statesOf(table.stdout)).toEqual({
      [engineRun.runId]: "waiting for an answer",
      "run-ask": "waiting for an answer",
      "run-fresh": "waiting for an answer"
    })
    const all = statesOf((await cli(["runs", "--wide"])).stdout)
    expect(all["run-paused"]).toBe("paused")
    expect(all["run-held"]).toBe("held (Escape)")
    expect(all["run-answered"]).toBe("completed")
    const json = JSON.parse((await cli(["runs", "--state", "waiting", "--json"])).stdout)
    expect(json.find((r: { runId: string }) => r.runId === "run-ask")).toMatchObject({
      state: "waiting",
      waitRequestId: "req-run-ask",
      condition: "waiting for an answer",
      conditionKind: "waiting"
    })
  })

  it("a bad --state is one line naming the choices, waiting and paused among them (exit 2)", async () => {
    const bad = await cli(["runs", "--state", "answering"])
    expect(bad.code).toBe(2)
    expectOneLine(bad)
    expect(bad.stderr).toContain(
      "--state: expected one of queued, running, waiting, completed, failed, timed_out, cancelled, " +
        'parked, orphaned, held, paused; got "answering"'
    )
  })

  it("show: the question's first line (no secret), the request, since when, the deadline and how to answer", async () => {
    const shown = await cli(["show", "run-ask"])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toMatch(/state:\s+waiting for an answer\n/)
    expect(shown.stdout).toMatch(/question:\s+Deploy with \[REDACTED\] to production\? …\n/)
    expect(shown.stdout).not.toContain("ghp_")
    expect(shown.stdout).not.toContain(SECRET.slice(4, 20))
    expect(shown.stdout).not.toContain("Second line")
    expect(shown.stdout).toMatch(/request:\s+req-run-ask\n/)
    expect(shown.stdout).toMatch(/since:\s+\d{4}-\d\d-\d\dT\S+Z \(2h ago\)\n/)
    expect(shown.stdout).toMatch(/deadline:\s+\d{4}-\d\d-\d\dT\S+Z \(in (5h 59m|6h)\)\n/)
    expect(shown.stdout).toContain(
      "answer:   type /workflow answer run-ask <text> in Pi in its session s-run-ask (pi --session s-run-ask)"
    )
    expect(shown.stdout).toMatch(
      /^1\s+ask\s+in flight\s+2h ago\s+-\s+8h\s+in (5h 59m|6h)\s+waiting for an answer \(request req-run-ask\)$/m
    )
    const fresh = await cli(["show", "run-fresh"])
    expect(fresh.stdout).toMatch(/question:\s+Which colour\?\n/)
    expect(fresh.stdout).toMatch(/deadline:\s+none \(it waits until it is answered or the run is cancelled\)/)
  })

  it("show: the engine's waiting run (its prompt redacted before it was stored)", async () => {
    const shown = await cli(["show", engineRun.runId])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toMatch(/question:\s+Ship it with key \[REDACTED\]\? …\n/)
    expect(shown.stdout).not.toContain("ghp_")
    expect(shown.stdout).toContain(`request:  ${engineRun.requestId}`)
    expect(shown.stdout).toMatch(/since:\s+\S+Z \((now|\d+s ago)\)/)
    expect(shown.stdout).toContain(
      `/workflow answer ${engineRun.runId} <text> in Pi in its session session-1`
    )
  })

  it("show: an answered wait's step says who answered; --json has the wait fields", async () => {
    const answered = await cli(["show", "run-answered"])
    expect(answered.stdout).toMatch(/state:\s+completed\n/)
    expect(answered.stdout).not.toMatch(/question:/)
    expect(answered.stdout).toMatch(
      /^1\s+ask\s+ok\s+3h ago\s+30m\s+-\s+-\s+answered by the user 2h 30m ago$/m
    )
    const done = JSON.parse((await cli(["show", "run-answered", "--json"])).stdout)
    expect(done.wait).toBeNull()
    expect(done.waits).toEqual([
      expect.objectContaining({
        requestId: "req-run-answered",
        state: "submitted",
        answeredBy: "user",
        answer: "main",
        deadline: null
      })
    ])
    const open = JSON.parse((await cli(["show", "run-ask", "--json"])).stdout)
    expect(open.run).toMatchObject({ waitRequestId: "req-run-ask", conditionKind: "waiting" })
    expect(open.wait).toMatchObject({
      requestId: "req-run-ask",
      runId: "run-ask",
      nodeId: "ask",
      attemptId: "att-run-ask",
      state: "open",
      answeredBy: null,
      answer: null,
      timeoutMs: 8 * 3_600_000
    })
    expect(open.wait.prompt).toContain("Deploy with [REDACTED] to production?")
    expect(Date.parse(open.wait.deadline)).toBe(open.wait.deadlineAt)
    expect(JSON.stringify(open)).not.toContain("ghp_")
  })

  it("doctor: waits older than --stale-after are listed as long waits, healthy (exit 0), not stalled", async () => {
    const found = await cli(["doctor"])
    expect(found.code, found.stdout).toBe(0)
    expect(found.stdout).toMatch(/^healthy$/m)
    expect(found.stdout).toContain(
      "waiting 1 run has waited for an answer for more than 10m at a waiting checkpoint: no failure"
    )
    expect(found.stdout).toMatch(
      /run-ask: greet at ask, waiting for an answer since 2h ago \(request req-run-ask\), deadline \S+Z \(in (5h 59m|6h)\), session s-run-ask; asks: Deploy with \[REDACTED\] to production\? …; answer: pi --session s-run-ask, then \/workflow answer run-ask <text>/
    )
    expect(found.stdout).not.toContain("ghp_")
    expect(found.stdout).toMatch(/ok {6}no run has been parked or orphaned for more than 10m/)
    // Young waits, the held and the paused run are no long waits.
    for (const young of ["run-fresh", engineRun.runId, "run-held", "run-paused"]) {
      expect(found.stdout).not.toContain(young)
    }
    const json = JSON.parse((await cli(["doctor", "--json"])).stdout)
    expect(json.healthy).toBe(true)
    expect(json.findings.find((f: { check: string }) => f.check === "longWaits")).toMatchObject({
      healthy: true,
      label: "waiting",
      items: [expect.stringMatching(/^run-ask: /)]
    })
    const later = await cli(["doctor", "--stale-after", "3h"])
    expect(later.code).toBe(0)
    expect(later.stdout).toMatch(/ok {6}no run has waited for an answer for more than 3h/)
    expect(later.stdout).not.toContain("run-ask")
  })
})

describe("long waits and question lines (pure)", () => {
  const NOW = Date.parse("2026-01-01T12:00:00.000Z")
  const run = (runId: string, waitRequestId: string | null) =>
    unchecked<RunRecord>({
      runId,
      workflowName: "w",
      targetSessionId: `s-${runId}`,
      state: "waiting",
      waitRequestId
    })
  const wait = (requestId: string, sinceMs: number, deadlineAt: number | null): WaitRecord => ({
    requestId,
    runId: requestId.replace("req-", ""),
    nodeId: "ask",
    attemptId: `att-${requestId}`,
    prompt: "Go?",
    since: new Date(NOW - sinceMs).toISOString(),
    deadlineAt,
    timeoutMs: null,
    state: "open",
    closedReason: null,
    answeredBy: null,
    answeredAt: null,
    answer: undefined
  })
  const longWaits = (waiting: ReadonlyArray<RunRecord>, waits: ReadonlyArray<WaitRecord>) =>
    diagnose({
      databasePath: "/x/db",
      now: NOW,
      staleMs: 600_000,
      staleRunMs: 600_000,
      legacyPending: 0,
      pending: [],
      running: [],
      waiting,
      waits,
      retiredRuns: new Set()
    }).find((finding) => finding.check === "longWaits")

  it("only waits past the threshold are listed; a passed deadline is said so; none is healthy with no label", () => {
    const found = longWaits(
      [run("r-old", "req-r-old"), run("r-young", "req-r-young"), run("r-paused", null)],
      [wait("req-r-old", 3_600_000, NOW - 60_000), wait("req-r-young", 60_000, null)]
    )
    expect(found?.healthy).toBe(true)
    expect(found?.label).toBe("waiting")
    expect(found?.items).toHaveLength(1)
    expect(found?.items[0]).toMatch(
      /^r-old: w at ask, waiting for an answer since 1h ago \(request req-r-old\), deadline 2026-01-01T11:59:00.000Z passed 1m ago \(its timeout route runs once its session is open in Pi\)/
    )
    expect(longWaits([], [])).toEqual({
      check: "longWaits",
      healthy: true,
      summary: "no run has waited for an answer for more than 10m",
      items: []
    })
  })

  it("questionLine: the first line of text, redacted, clipped, marked when more follows", () => {
    expect(questionLine("\n\n  Ship   it? \n more")).toBe("Ship it? …")
    expect(questionLine("only")).toBe("only")
    expect(questionLine(" \n ")).toBe("(no text)")
    expect(questionLine(`token ${SECRET} ok`)).toBe("token [REDACTED] ok")
    expect(questionLine("x".repeat(300), 20)).toBe(`${"x".repeat(19)}…`)
  })
})
