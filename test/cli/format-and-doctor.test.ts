/**
 * The CLI's pure parts (times, tables, colour, intent stages, doctor's findings) and its program
 * run in this process (`main`), next to the child-process tests of the built bin in cli.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { afterAll, afterEach, describe, expect, it, vi } from "vitest"
import { layerStores } from "../../src/app/layers.ts"
import { duration, relative } from "../../src/domain/text.ts"
import { diagnose, healthy } from "../../src/cli/doctor.ts"
import { cell, table, wantsColour } from "../../src/cli/format.ts"
import { main } from "../../src/cli/main.ts"
import { intentStage } from "../../src/cli/views.ts"
import type { TurnIntent } from "../../src/domain/turn-intent.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { sampleFacts } from "../support/fixtures.ts"

const NOW = Date.parse("2026-01-01T12:00:00.000Z")

const intent = (overrides: Partial<TurnIntent> = {}): TurnIntent => ({
  intentId: "ti-1",
  sourceEventId: "ev-1",
  runId: "run-1",
  workflowRef: "greet",
  targetSessionId: "s-1",
  cause: "timedOut",
  nodeId: "hello",
  attemptId: "att-1",
  facts: sampleFacts(),
  requestedAt: new Date(NOW - 60 * 60_000).toISOString(),
  eligibleAt: null,
  resolvedAt: null,
  resolution: null,
  resolutionMessageId: null,
  deliveryClaimToken: null,
  deliveryClaimExpiresAt: null,
  ...overrides
})

describe("times as people read them", () => {
  it("durations use the largest unit, and the next one while the first is small", () => {
    expect(
      [0, 999, 1_000, 45_000, 200_000, 600_000, 3_600_000 * 2 + 300_000, 86_400_000 * 3].map(duration)
    ).toEqual(["0ms", "999ms", "1s", "45s", "3m 20s", "10m", "2h 5m", "3d"])
  })

  it("relative times in both directions; none and unparsable stamps are shown plainly", () => {
    expect(relative(NOW, NOW - 5 * 60_000)).toBe("5m ago")
    expect(relative(NOW, new Date(NOW + 30_000).toISOString())).toBe("in 30s")
    expect(relative(NOW, NOW - 200)).toBe("now")
    expect(relative(NOW, null)).toBe("-")
    expect(relative(NOW, "yesterday-ish")).toBe("yesterday-ish")
  })
})

describe("tables and colour", () => {
  it("aligns columns by their text and colours cells only when asked", () => {
    const rows = [
      [cell("a"), cell("completed", "good")],
      [cell("longer"), cell("failed", "bad")]
    ]
    const plain = table({ colour: false, now: NOW }, ["ID", "STATE"], rows)
    expect(plain.split("\n")).toEqual(["ID      STATE", "a       completed", "longer  failed"])
    const coloured = table({ colour: true, now: NOW }, ["ID", "STATE"], rows)
    expect(coloured).toContain("\u001b[32mcompleted\u001b[0m")
    expect(
      coloured
        .replaceAll("\u001b[32m", "")
        .replaceAll("\u001b[31m", "")
        .replaceAll("\u001b[2m", "")
        .replaceAll("\u001b[0m", "")
    ).toBe(plain)
  })

  it("colour only on a TTY, never with NO_COLOR or a dumb terminal", () => {
    expect(wantsColour({ isTTY: true }, {})).toBe(true)
    expect(wantsColour({ isTTY: false }, {})).toBe(false)
    expect(wantsColour({}, {})).toBe(false)
    expect(wantsColour({ isTTY: true }, { NO_COLOR: "1" })).toBe(false)
    expect(wantsColour({ isTTY: true }, { TERM: "dumb" })).toBe(false)
  })
})

describe("intent stages", () => {
  it("pending → eligible → claimed (or claim expired) → resolved by its path", () => {
    const at = new Date(NOW).toISOString()
    expect(intentStage(intent(), NOW).text).toBe("pending")
    expect(intentStage(intent({ eligibleAt: at }), NOW).text).toBe("eligible")
    expect(
      intentStage(intent({ eligibleAt: at, deliveryClaimToken: "t", deliveryClaimExpiresAt: NOW + 1 }), NOW)
        .text
    ).toBe("claimed")
    expect(
      intentStage(intent({ eligibleAt: at, deliveryClaimToken: "t", deliveryClaimExpiresAt: NOW - 1 }), NOW)
        .text
    ).toBe("claim expired")
    expect(
      intentStage(intent({ resolvedAt: at, resolution: "workflowPrompt", resolutionMessageId: "m" }), NOW)
        .text
    ).toBe("resolved (workflowPrompt)")
  })
})

describe("doctor's findings", () => {
  const base = {
    databasePath: "/x/db",
    now: NOW,
    staleMs: 10 * 60_000,
    staleRunMs: 10 * 60_000,
    legacyPending: 0,
    pending: [],
    running: [],
    waiting: [],
    waits: [],
    retiredRuns: new Set<string>()
  }

  it("an empty database is healthy", () => {
    const findings = diagnose(base)
    expect(healthy(findings)).toBe(true)
    expect(findings.map((f) => f.check)).toEqual([
      "legacyLaunchFailures",
      "staleIntents",
      "expiredIntentClaims",
      "stalledRuns",
      "longWaits"
    ])
  })

  it("a young pending intent, or an eligible one, is not stranded", () => {
    const young = intent({ requestedAt: new Date(NOW - 60_000).toISOString() })
    const eligible = intent({ intentId: "ti-2", eligibleAt: new Date(NOW).toISOString() })
    expect(healthy(diagnose({ ...base, pending: [young, eligible] }))).toBe(true)
  })

  it("an old ineligible intent is stranded; the advice names what to do", () => {
    const [, stale] = diagnose({ ...base, pending: [intent()] })
    expect(stale?.healthy).toBe(false)
    expect(stale?.summary).toMatch(/^1 turn intent waited more than 10m .* Open the session again in Pi/)
    expect(stale?.items).toEqual(["ti-1: run run-1, timedOut at hello, session s-1, requested 1h ago"])
  })

  it("an old intent of a run the user cancelled is retired, not stranded", () => {
    const [, stale] = diagnose({ ...base, pending: [intent()], retiredRuns: new Set(["run-1"]) })
    expect(stale?.healthy).toBe(true)
  })
})

describe("main (the program, in this process)", () => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-cli-main-"))
  const db = join(dir, "c.db")
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  afterEach(() => {
    vi.restoreAllMocks()
  })

  const capture = async (args: ReadonlyArray<string>) => {
    const out: Array<string> = []
    const err: Array<string> = []
    vi.spyOn(console, "log").mockImplementation((...a: Array<unknown>) => {
      out.push(a.map(String).join(" "))
    })
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      err.push(String(chunk))
      return true
    })
    const code = await main(["node", "pi-workflow-turns", ...args])
    vi.restoreAllMocks()
    return { code, stdout: out.join("\n"), stderr: err.join("") }
  }

  it("lists, shows and checks a store-made database; errors are one line", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(Layer.build(layerStores({ filename: db })), (context) =>
          Context.get(context, RunStore).reserve({
            runId: "run-q",
            workflowName: "greet",
            workflowRef: "greet",
            revision: null,
            sourceFingerprint: "f",
            snapshot: {},
            targetSessionId: "s",
            origin: "command",
            input: null,
            startAt: "hello",
            maxSteps: 3
          })
        )
      )
    )
    const runs = await capture(["runs", "--db", db, "--json"])
    expect(runs.code).toBe(0)
    expect(JSON.parse(runs.stdout)[0]).toMatchObject({ runId: "run-q", state: "queued", result: null })
    const show = await capture(["show", "run-q", "--db", db])
    expect(show.code).toBe(0)
    expect(show.stdout).toMatch(/state:\s+queued/)
    expect(show.stdout).toContain("no steps yet")
    const intents = await capture(["intents", "--db", db])
    expect(intents.stdout).toBe("no turn intents match")
    const doctor = await capture(["doctor", "--db", db, "--json"])
    expect(doctor.code).toBe(0)
    expect(JSON.parse(doctor.stdout).healthy).toBe(true)
    const missing = await capture(["show", "nope", "--db", db])
    expect(missing).toMatchObject({
      code: 1,
      stderr: "pi-workflow-turns: no turn intent or run with ID nope\n"
    })
    const stale = await capture(["doctor", "--db", db, "--stale-minutes", "0"])
    expect(stale).toMatchObject({
      code: 2,
      stderr: "pi-workflow-turns: --stale-minutes must be at least 1, got 0\n"
    })
  })
})
