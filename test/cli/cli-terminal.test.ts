/**
 * The CLI in a terminal (issue 28), through the built bin: a missing database names the ones it
 * can see, tables fit 80 columns with short IDs, a short ID (a unique prefix) is taken wherever
 * an ID is, help describes every option, and bad values name their flag.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { expectOneLine, newRun, runCli } from "./cli-support.ts"
import { withStores } from "./seed-sqlite.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"] as string

let dir = ""
let db = ""
const intentIds: Array<string> = []
// Run IDs as the engine makes them: creation stamp, workflow slug, random suffix.
const RUNS = [
  "20261201T101500Z-review-1a2b3c4d",
  "20261201T101500Z-review-9f8e7d6c",
  "20261201T113000Z-greet-0badcafe"
] as const

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runCli(join(root, bin), dir, args, env)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-term-"))
  db = join(dir, "long.db")
  await Effect.runPromise(
    withStores(
      db,
      Effect.gen(function* () {
        const runs = yield* RunStore
        const intents = yield* TurnIntentStore
        for (const [i, runId] of RUNS.entries()) {
          yield* runs.reserve({
            ...newRun(runId, `session-0193a1b2-c3d4-7e5f-8a9b-${String(i).repeat(12)}`),
            workflowName: i < 2 ? "an-uncommonly-long-workflow-name-for-reviews" : "greet"
          })
          const intent = yield* intents.ensure(
            sampleIntent({
              runId,
              targetSessionId: `session-0193a1b2-c3d4-7e5f-8a9b-${String(i).repeat(12)}`,
              sourceEventId: `ev-${i}`,
              cause: "controllerInterrupted",
              nodeId: "a-node-with-a-rather-long-name",
              facts: sampleFacts({ runId })
            })
          )
          intentIds.push(intent.intentId)
        }
      })
    )
  )
})

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

const columns = (text: string) =>
  Math.max(
    ...text
      .trimEnd()
      .split("\n")
      .map((line) => [...line].length)
  )

describe("pi-workflow-turns in a terminal", () => {
  it("no database for this directory: one line naming the databases beside it (at most 5, the rest counted)", async () => {
    const agent = join(dir, "agent")
    const folder = join(agent, "pi-workflow-turns")
    mkdirSync(folder, { recursive: true })
    for (const name of ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]) {
      writeFileSync(join(folder, `${name}-0123456789abcdef.db`), "")
    }
    writeFileSync(join(folder, "hand-made.db"), "")
    writeFileSync(join(folder, "notes.txt"), "")
    const result = await cli(["runs"], { PI_CODING_AGENT_DIR: agent })
    expect(result.code).toBe(2)
    expectOneLine(result)
    expect(result.stderr).toContain(`no controller database at ${folder}/`)
    expect(result.stderr).toContain("has 7 other databases: alpha-0123456789abcdef.db (project alpha), ")
    expect(result.stderr).toContain("and 2 more; --db PATH picks one")
    expect(result.stderr).not.toContain("notes.txt")
    expect(result.stderr).not.toContain("zeta")
  })

  it("runs and intents fit 80 columns with short IDs; --wide shows everything in full; --json unchanged", async () => {
    const runs = await cli(["runs", "--db", db])
    expect(runs.code).toBe(0)
    expect(columns(runs.stdout)).toBeLessThanOrEqual(80)
    // Unique prefixes: the two runs of one second need their suffix, the third only its stamp.
    expect(runs.stdout).toMatch(/^20261201T113000Z\s/m)
    expect(runs.stdout).toMatch(/^20261201T101500Z-review-1\s/m)
    expect(runs.stdout).toContain("…")
    const intents = await cli(["intents", "--db", db])
    expect(intents.code).toBe(0)
    expect(columns(intents.stdout)).toBeLessThanOrEqual(80)
    expect(intents.stdout).not.toContain("deferred-turn:")
    for (const id of intentIds) expect(intents.stdout).toContain(id.slice("deferred-turn:".length, 26))

    const wide = await cli(["intents", "--db", db, "--wide"])
    for (const id of intentIds) expect(wide.stdout).toContain(id)
    expect(wide.stdout).toContain("SESSION")
    const wideRuns = await cli(["runs", "--db", db, "--wide"])
    for (const id of RUNS) expect(wideRuns.stdout).toContain(id)
    expect(wideRuns.stdout).toContain("an-uncommonly-long-workflow-name-for-reviews")
    const json = JSON.parse((await cli(["runs", "--db", db, "--json"])).stdout)
    expect(json.map((r: { runId: string }) => r.runId).sort()).toEqual([...RUNS].sort())
  })

  it("show and --run take a unique prefix; an ambiguous one is one line with candidates (exit 2)", async () => {
    const [first] = intentIds
    const short = first?.slice("deferred-turn:".length, "deferred-turn:".length + 12) ?? ""
    const intent = await cli(["show", short, "--db", db])
    expect(intent.code).toBe(0)
    expect(intent.stdout).toContain(`intent:`)
    expect(intent.stdout).toContain(first)
    const run = await cli(["show", "20261201T113000Z", "--db", db])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/run:\s+20261201T113000Z-greet-0badcafe/)
    const ambiguous = await cli(["show", "20261201T1015", "--db", db])
    expect(ambiguous.code).toBe(2)
    expectOneLine(ambiguous)
    expect(ambiguous.stderr).toContain('the ID prefix "20261201T1015" is ambiguous')
    expect(ambiguous.stderr).toContain(`run ${RUNS[0]}`)
    expect(ambiguous.stderr).toContain(`run ${RUNS[1]}`)
    const none = await cli(["show", "ffffffffffff", "--db", db])
    expect(none.code).toBe(1)
    expectOneLine(none)
    expect(none.stderr).toContain("no turn intent or run with ID ffffffffffff")
    const byRun = JSON.parse(
      (await cli(["intents", "--db", db, "--run", "20261201T113000Z", "--json"])).stdout
    )
    expect(byRun.map((i: { runId: string }) => i.runId)).toEqual([RUNS[2]])
  })

  it("a bad --state names the flag, the choices and the value: one line, exit 2", async () => {
    const result = await cli(["runs", "--db", db, "--state", "bogus"])
    expect(result.code).toBe(2)
    expectOneLine(result)
    expect(result.stderr).toContain(
      'pi-workflow-turns: --state: expected one of queued, running, waiting, completed, failed, timed_out, cancelled, parked, orphaned, held, paused; got "bogus"'
    )
  })

  it("runs --help names each option with its own description, without generic lines or built-ins", async () => {
    const help = await cli(["runs", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(
      /--state text\n\s+only runs in this state \(queued, running, completed, .*\) or condition \(waiting, parked, orphaned, held, paused; waiting: at a waiting checkpoint, for an answer\)/
    )
    expect(help.stdout).toMatch(/--wide\n\s+show every column in full/)
    expect(help.stdout).toMatch(/--limit integer\n\s+at most this many rows/)
    expect(help.stdout).not.toContain("A true or false value.")
    expect(help.stdout).not.toContain("--wizard")
  })
})
