/**
 * Property tests (effect's FastCheck) for facts and IDs, alone and through the real store:
 * every valid input is accepted unchanged, every input that breaks a rule gets a typed error
 * (never a defect), and a rejected store call writes nothing.
 */
import { Effect, Either, Exit, FastCheck as fc, Layer, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  boundReason,
  decodeFactsJson,
  encodeFactsJson,
  FallbackFacts,
  MAX_REASON_LENGTH,
  parseStoredFacts,
  validateFacts
} from "../../src/domain/facts.ts"
import { checkId, intentId, sourceEventId } from "../../src/domain/identity.ts"
import { codePointLength } from "../../src/domain/text.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { tempDirectory } from "../../src/testing.ts"
import { sampleIntent } from "../support/fixtures.ts"
import {
  anyId,
  badOrdinal,
  cause,
  invalidFacts,
  invalidId,
  RUNS,
  validFacts,
  validId
} from "./arbitraries.ts"

const strictDecode = Schema.decodeUnknownEither(FallbackFacts, { onExcessProperty: "error" })
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runSyncExit(effect)

describe("facts", () => {
  it("valid facts are accepted unchanged and survive the JSON round trip", () => {
    fc.assert(
      fc.property(validFacts, (facts) => {
        const exit = run(validateFacts(facts))
        expect(exit).toEqual(Exit.succeed(facts))
        expect(Effect.runSync(decodeFactsJson(encodeFactsJson(facts)))).toEqual(facts)
        expect(parseStoredFacts(encodeFactsJson(facts))).toEqual(facts)
      }),
      { numRuns: RUNS }
    )
  })

  it("facts breaking one rule fail with InvalidFacts naming the problem, never a defect", () => {
    fc.assert(
      fc.property(invalidFacts, ({ rule, value }) => {
        const exit = run(validateFacts(value))
        if (Exit.isSuccess(exit)) throw new Error(`accepted facts with ${rule}`)
        const error = Either.getLeft(
          Exit.match(exit, { onFailure: (c) => Either.left(c), onSuccess: Either.right })
        )
        expect(Exit.isFailure(exit) && exit.cause._tag).toBe("Fail")
        expect(String(error)).toContain("InvalidFacts")
        expect(typeof parseStoredFacts(JSON.stringify(value) ?? "null")).toBe("string")
      }),
      { numRuns: RUNS }
    )
  })

  it("the fast validation path agrees with the strict schema on any input", () => {
    const junk = fc.oneof(
      validFacts,
      invalidFacts.map((x) => x.value),
      fc.anything(),
      validFacts.chain((facts) =>
        fc
          .dictionary(fc.string({ maxLength: 8 }), fc.anything(), { maxKeys: 2 })
          .map((extra) => ({ ...extra, ...facts }))
      )
    )
    fc.assert(
      fc.property(junk, (value) => {
        const fast = Exit.isSuccess(run(validateFacts(value)))
        const strict = Either.isRight(strictDecode(value))
        expect(fast).toBe(strict)
        const json = JSON.stringify(value)
        if (json !== undefined) {
          const stored = parseStoredFacts(json)
          const decoded = Exit.isSuccess(run(decodeFactsJson(json)))
          expect(typeof stored !== "string").toBe(decoded)
        }
      }),
      { numRuns: RUNS * 3 }
    )
  })

  it("boundReason always yields a valid reason that keeps the start of the text", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 100 }),
          fc.string({ minLength: 8_100, maxLength: 9_000, unit: "binary" })
        ),
        (reason) => {
          const bounded = boundReason(reason)
          expect(codePointLength(bounded)).toBeLessThanOrEqual(MAX_REASON_LENGTH)
          if (codePointLength(reason) <= MAX_REASON_LENGTH) expect(bounded).toBe(reason)
          else expect(reason.startsWith(bounded.slice(0, 8_000))).toBe(true)
        }
      ),
      { numRuns: RUNS / 3 }
    )
  })
})

describe("IDs", () => {
  it("an ID-like input is accepted exactly when it has 1 to 512 characters", () => {
    fc.assert(
      fc.property(anyId, (id) => {
        const exit = run(checkId("runId", id))
        expect(Exit.isSuccess(exit)).toBe(id.length >= 1 && id.length <= 512)
        if (Exit.isFailure(exit)) expect(JSON.stringify(exit.cause)).toContain("InvalidInput")
      }),
      { numRuns: RUNS }
    )
  })

  const key = fc.record({
    targetSessionId: validId,
    runId: validId,
    sourceEventId: validId,
    nodeId: fc.option(validId, { nil: null }),
    attemptId: fc.option(validId, { nil: null }),
    cause
  })

  it("intent IDs are stable, well-formed, and differ for different keys", () => {
    fc.assert(
      fc.property(key, key, (a, b) => {
        const idA = Effect.runSync(intentId(a))
        expect(Effect.runSync(intentId({ ...a }))).toBe(idA)
        expect(idA).toMatch(/^deferred-turn:[0-9a-f]{64}$/)
        const sameKey =
          JSON.stringify([
            a.targetSessionId,
            a.runId,
            a.sourceEventId,
            a.nodeId ?? "$launch",
            a.attemptId,
            a.cause
          ]) ===
          JSON.stringify([
            b.targetSessionId,
            b.runId,
            b.sourceEventId,
            b.nodeId ?? "$launch",
            b.attemptId,
            b.cause
          ])
        expect(Effect.runSync(intentId(b)) === idA).toBe(sameKey)
      }),
      { numRuns: RUNS }
    )
  })

  it("a source event key with a bad ordinal or ID is InvalidInput naming the field", () => {
    const bad = fc.oneof(
      fc
        .tuple(validId, badOrdinal)
        .map(([runId, interruption]) => ({ field: "interruption", runId, nodeId: null, interruption })),
      invalidId.map((runId) => ({ field: "runId", runId, nodeId: null, interruption: 0 })),
      fc
        .tuple(validId, invalidId)
        .map(([runId, nodeId]) => ({ field: "nodeId", runId, nodeId, interruption: 0 }))
    )
    fc.assert(
      fc.property(bad, cause, ({ field, runId, nodeId, interruption }, c) => {
        const exit = run(sourceEventId({ runId, nodeId, attemptId: null, cause: c, interruption }))
        expect(exit).toMatchObject({
          _tag: "Failure",
          cause: { _tag: "Fail", error: { _tag: "InvalidInput", field } }
        })
      }),
      { numRuns: RUNS }
    )
  })
})

describe("the store rejects bad input and writes nothing", () => {
  let runtime: ManagedRuntime.ManagedRuntime<TurnIntentStore, unknown>
  let existing = ""
  const store = <A, E>(use: (s: TurnIntentStore["Type"]) => Effect.Effect<A, E>) =>
    runtime.runPromiseExit(Effect.flatMap(TurnIntentStore, use))
  const snapshot = () =>
    runtime.runPromise(
      Effect.flatMap(TurnIntentStore, (s) => s.list({ limit: 1_000 })).pipe(
        Effect.map((rows) => JSON.stringify(rows))
      )
    )

  beforeAll(async () => {
    runtime = ManagedRuntime.make(
      Layer.unwrapScoped(
        Effect.map(tempDirectory("pwt-fuzz-"), (dir) => layerSqlite({ filename: `${dir}/controller.db` }))
      )
    )
    const created = await runtime.runPromise(
      Effect.flatMap(TurnIntentStore, (s) => s.ensure(sampleIntent({ eligible: true })))
    )
    existing = created.intentId
  })
  afterAll(() => runtime.dispose())

  it("invalid facts: ensure and makeEligible fail with InvalidFacts, the table is unchanged", async () => {
    const before = await snapshot()
    await fc.assert(
      fc.asyncProperty(invalidFacts, async ({ value }) => {
        const facts = value as FallbackFacts
        const ensured = await store((s) => s.ensure(sampleIntent({ sourceEventId: "fuzz", facts })))
        expect(ensured).toMatchObject({
          _tag: "Failure",
          cause: { _tag: "Fail", error: { _tag: "InvalidFacts" } }
        })
        if (value === undefined) return // omitted facts mean "keep the stored ones"
        const refreshed = await store((s) => s.makeEligible({ intentId: existing, facts }))
        expect(refreshed).toMatchObject({
          _tag: "Failure",
          cause: { _tag: "Fail", error: { _tag: "InvalidFacts" } }
        })
      }),
      { numRuns: RUNS / 3 }
    )
    expect(await snapshot()).toBe(before)
  })

  it("invalid IDs, tokens, leases and limits: InvalidInput naming the field, the table is unchanged", async () => {
    const before = await snapshot()
    const badLease = fc.oneof(
      fc.integer({ max: 0 }),
      fc.integer({ min: 3_600_001 }),
      fc.double().filter((n) => !Number.isSafeInteger(n))
    )
    const badLimit = fc.oneof(
      fc.integer({ max: 0 }),
      fc.integer({ min: 1_001 }),
      fc.double().filter((n) => !Number.isSafeInteger(n))
    )
    const calls: fc.Arbitrary<{
      readonly field: string
      readonly call: (s: TurnIntentStore["Type"]) => Effect.Effect<unknown, unknown>
    }> = fc.oneof(
      fc
        .tuple(
          fc.constantFrom("sourceEventId", "runId", "targetSessionId", "workflowRef", "nodeId", "attemptId"),
          invalidId
        )
        .map(([field, value]) => ({
          field,
          call: (s: TurnIntentStore["Type"]) => s.ensure(sampleIntent({ [field]: value }))
        })),
      invalidId.map((value) => ({ field: "intentId", call: (s: TurnIntentStore["Type"]) => s.get(value) })),
      fc.tuple(fc.constantFrom("runId", "targetSessionId", "token"), invalidId).map(([field, value]) => ({
        field,
        call: (s: TurnIntentStore["Type"]) =>
          s.claimForRun({
            runId: "run-1",
            targetSessionId: "session-1",
            token: "t",
            leaseMs: 1_000,
            [field]: value
          })
      })),
      badLease.map((leaseMs) => ({
        field: "leaseMs",
        call: (s: TurnIntentStore["Type"]) =>
          s.claimEligibleForSession({ targetSessionId: "session-1", token: "t", leaseMs, limit: 5 })
      })),
      badLimit.map((limit) => ({
        field: "limit",
        call: (s: TurnIntentStore["Type"]) =>
          s.claimEligibleForSession({ targetSessionId: "session-1", token: "t", leaseMs: 1_000, limit })
      })),
      fc.tuple(fc.constantFrom("intentId", "token", "messageId"), invalidId).map(([field, value]) => ({
        field,
        call: (s: TurnIntentStore["Type"]) =>
          s.resolve({
            intentId: existing,
            token: "t",
            resolution: "fallback",
            messageId: "m",
            [field]: value
          })
      })),
      fc
        .string({ maxLength: 20 })
        .filter((r) => !["workflowPrompt", "presentation", "fallback"].includes(r))
        .map((resolution) => ({
          field: "resolution",
          call: (s: TurnIntentStore["Type"]) =>
            s.resolve({
              intentId: existing,
              token: "t",
              resolution: resolution as "fallback",
              messageId: "m"
            })
        })),
      fc.tuple(fc.constantFrom("intentId", "token"), invalidId).map(([field, value]) => ({
        field,
        call: (s: TurnIntentStore["Type"]) => s.release({ intentId: existing, token: "t", [field]: value })
      })),
      badLimit.map((limit) => ({ field: "limit", call: (s: TurnIntentStore["Type"]) => s.list({ limit }) }))
    )
    await fc.assert(
      fc.asyncProperty(calls, async ({ field, call }) => {
        const exit = await store(call)
        expect(exit).toMatchObject({
          _tag: "Failure",
          cause: { _tag: "Fail", error: { _tag: "InvalidInput", field } }
        })
      }),
      { numRuns: RUNS }
    )
    expect(await snapshot()).toBe(before)
  })
})
