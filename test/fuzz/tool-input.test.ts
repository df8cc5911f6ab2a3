/**
 * Property tests for the `workflow` tool's input, end to end: `decodeToolInput` is total (any
 * value gives a readable error or a typed input, never an exception), every error it or Pi's
 * argument preparation gives is at most 2,000 code points, it accepts exactly the valid
 * shapes, and a decoded input that makes no sense (unknown workflow, input the workflow rejects,
 * unknown run or request) gets an error reply from the real app and writes nothing to any table.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import BetterSqlite from "better-sqlite3"
import { Effect, Either, FastCheck as fc, Layer, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as App from "../../src/app/layers.ts"
import { runTool, decodeToolInput, type ToolInput } from "../../src/app/tool.ts"
import { MAX_ERROR_CHARS } from "../../src/app/input-bounds.ts"
import { prepareToolArguments, TOOL_ACTIONS } from "../../src/extension/tool-parameters.ts"
import { layerFake } from "../../src/testing.ts"
import { RUNS } from "./arbitraries.ts"
import { NoSyncPass } from "../support/timing.ts"

const id = fc.string({ minLength: 1, maxLength: 512 })
const badId = fc.oneof(
  fc.constant(""),
  fc.integer({ min: 513, max: 2_000 }).map((n) => "r".repeat(n))
)
const json = fc.jsonValue({ maxDepth: 2 })

const validInput = fc.oneof(
  fc.constant({ action: "list" }),
  fc.record(
    { action: fc.constant("start"), workflow: id, input: json },
    { requiredKeys: ["action", "workflow"] }
  ),
  fc.record({ action: fc.constant("status"), runId: id }, { requiredKeys: ["action"] }),
  fc.record({ action: fc.constant("cancel"), runId: id }, { requiredKeys: ["action"] }),
  fc.record({ action: fc.constant("submit"), requestId: id, output: json })
)

/** Inputs breaking exactly one rule. */
const invalidInput = fc.oneof(
  fc.anything().filter((v) => typeof v !== "object" || v === null || !("action" in v)),
  fc
    .string()
    .filter((a) => !(TOOL_ACTIONS as ReadonlyArray<string>).includes(a))
    .map((action) => ({ action })),
  fc.oneof(fc.integer(), fc.boolean(), fc.constant(null)).map((action) => ({ action })),
  fc
    .tuple(validInput, fc.string({ minLength: 1, maxLength: 12 }))
    .filter(([input, key]) => !(key in input) && key !== "action" && key !== "_tag")
    .map(([input, key]) => ({ ...input, [key]: "extra" })),
  badId.map((workflow) => ({ action: "start", workflow })),
  fc
    .oneof(fc.integer(), fc.constant(null), fc.array(fc.string()))
    .map((workflow) => ({ action: "start", workflow })),
  fc.tuple(fc.constantFrom("status", "cancel"), badId).map(([action, runId]) => ({ action, runId })),
  badId.map((requestId) => ({ action: "submit", requestId, output: 1 })),
  id.map((requestId) => ({ action: "submit", requestId })),
  fc.constant({ action: "start" })
)

describe("decodeToolInput", () => {
  it("is total: any value gives a readable error or a typed input, never an exception", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), validInput, invalidInput), (value) => {
        const decoded = decodeToolInput(value)
        if (Either.isLeft(decoded)) {
          expect(decoded.left).toMatch(/^workflow/)
          expect(chars(decoded.left)).toBeLessThanOrEqual(MAX_ERROR_CHARS)
        } else expect(TOOL_ACTIONS).toContain(decoded.right._tag)
      }),
      { numRuns: RUNS }
    )
  })

  it("accepts every valid input, keeping its fields", () => {
    fc.assert(
      fc.property(validInput, (value) => {
        const decoded = decodeToolInput(value)
        if (Either.isLeft(decoded)) throw new Error(`rejected ${JSON.stringify(value)}: ${decoded.left}`)
        const { action, ...fields } = value
        expect(decoded.right).toEqual({ _tag: action, ...fields })
      }),
      { numRuns: RUNS }
    )
  })

  it("rejects every input that breaks a rule", () => {
    fc.assert(
      fc.property(invalidInput, (value) => {
        expect(Either.isLeft(decodeToolInput(value))).toBe(true)
      }),
      { numRuns: RUNS }
    )
  })
})

/** Code points: the unit of every bound. */
const chars = (text: string) => [...text].length
/** A lone surrogate: what cutting a pair in half leaves. */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const nestedJson = (levels: number): unknown => {
  let value: unknown = "leaf"
  for (let i = 0; i < levels; i++) value = i % 3 === 0 ? [value] : { [`k${i % 7}`]: value, n: i }
  return value
}
/** Long well-formed text: ASCII, any code point, or astral characters only (pairs to cut). */
const longText = fc.oneof(
  fc.string({ unit: "binary", minLength: 1_500, maxLength: 4_000 }),
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => "x".repeat(n)),
  fc.integer({ min: 1_000, max: 50_000 }).map((n) => "😀".repeat(n)),
  fc.string({ unit: "grapheme", maxLength: 60 })
)
const deep = fc.integer({ min: 65, max: 5_000 }).map(nestedJson)
const manyKeys = fc
  .tuple(fc.integer({ min: 2, max: 5_000 }), longText)
  .map(([n, name]) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${name.slice(0, 30)}${i}`, i]))
  )
const action = fc.constantFrom(...TOOL_ACTIONS)
const stringField = fc.constantFrom("workflow", "runId", "requestId", "text")

/** Hostile arguments a model could send: huge, deep, wide, or in the wrong shape. */
const hostile = fc.oneof(
  longText.map((name) => ({ action: name })),
  fc.tuple(action, longText, fc.oneof(longText, deep, fc.anything())).map(([a, key, value]) => ({
    [key]: value,
    action: a
  })),
  fc.tuple(action, manyKeys).map(([a, keys]) => ({ ...keys, action: a })),
  fc.tuple(action, fc.constantFrom("input", "output", "workflow"), deep).map(([a, key, value]) => ({
    action: a,
    requestId: "q",
    workflow: "w",
    [key]: value
  })),
  fc
    .tuple(
      action,
      stringField,
      fc.oneof(
        longText,
        fc.array(longText, { maxLength: 3 }),
        fc.dictionary(longText, longText, { maxKeys: 3 })
      )
    )
    .map(([a, key, value]) => ({ action: a, [key]: value }))
)

describe("every tool error is bounded, whatever the model sends", () => {
  it(`decodeToolInput and Pi's argument preparation answer at most ${MAX_ERROR_CHARS} code points, never cutting a pair`, () => {
    fc.assert(
      fc.property(hostile, (value) => {
        const decoded = decodeToolInput(value)
        const texts: Array<string> = Either.isLeft(decoded) ? [decoded.left] : []
        try {
          expect(prepareToolArguments(value)).toBe(value)
        } catch (error) {
          texts.push(error instanceof Error ? error.message : String(error))
        }
        for (const text of texts) {
          expect(chars(text)).toBeLessThanOrEqual(MAX_ERROR_CHARS)
          expect(text).not.toMatch(LONE)
          expect(text).toMatch(/^workflow/)
        }
      }),
      { numRuns: RUNS / 3 }
    )
  })
})

describe("the app given nonsensical tool input writes nothing", () => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-fuzz-tool-"))
  const filename = join(dir, "controller.db")
  const guarded = {
    name: "guarded",
    startAt: "ask",
    input: Schema.Struct({ task: Schema.NonEmptyString }),
    nodes: { ask: { type: "agent", prompt: "Do the task." } },
    edges: []
  }
  const runtime = ManagedRuntime.make(
    App.layer({
      database: { filename },
      workflows: [guarded]
    }).pipe(Layer.provide(NoSyncPass), Layer.provideMerge(layerFake({ sessionId: "fuzz-session" })))
  )
  let raw: BetterSqlite.Database
  const snapshot = () =>
    JSON.stringify(
      ["workflow_runs", "workflow_steps", "workflow_requests", "workflow_turn_intents"].map((table) =>
        raw.prepare(`SELECT * FROM ${table}`).all()
      )
    )

  beforeAll(async () => {
    await runtime.runPromise(Effect.void)
    raw = new BetterSqlite(filename, { readonly: true })
  })
  afterAll(async () => {
    raw.close()
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  const rejectedByTheWorkflow = fc
    .oneof(json, fc.record({ task: fc.oneof(fc.constant(""), fc.integer(), fc.constant(null)) }))
    .filter((input) => !Schema.is(guarded.input)(input))

  const nonsense: fc.Arbitrary<ToolInput> = fc.oneof(
    id
      .filter((name) => name !== "guarded")
      .map((workflow) => ({ _tag: "start" as const, workflow, input: {} })),
    rejectedByTheWorkflow.map((input) => ({ _tag: "start" as const, workflow: "guarded", input })),
    id.map((runId) => ({ _tag: "status" as const, runId })),
    id.map((runId) => ({ _tag: "cancel" as const, runId })),
    fc.constantFrom<ToolInput>({ _tag: "status" }, { _tag: "cancel" }),
    fc.tuple(id, json).map(([requestId, output]) => ({ _tag: "submit" as const, requestId, output }))
  )

  it("every such input gets an error reply and every table stays as it was", async () => {
    const before = snapshot()
    await fc.assert(
      fc.asyncProperty(nonsense, async (input) => {
        const reply = await runtime.runPromise(runTool(input))
        expect(reply.isError).toBe(true)
        // One plain line for the reader; the error's kind is in the details for programs.
        expect(reply.text).toMatch(/^workflow \w+ failed: \S/)
        expect(reply.details.error).toMatch(/^\w+$/)
        expect(chars(reply.text)).toBeLessThanOrEqual(MAX_ERROR_CHARS)
      }),
      { numRuns: RUNS / 2 }
    )
    expect(snapshot()).toBe(before)
  })
})
