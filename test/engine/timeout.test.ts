import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber, TestClock } from "effect"
import type { StepContext } from "../../src/engine/definition.ts"
import { TIMEOUT_CALLBACK_LIMIT_MS, TimeoutCallbackFailed } from "../../src/engine/errors.ts"
import {
  DEFAULT_TIMEOUT_MS,
  normalizeTimeout,
  resolveTimeout,
  sleepMillis
} from "../../src/engine/timeout.ts"

const context: StepContext = {
  input: { limit: 1234 },
  outputs: {},
  results: {},
  history: [],
  signal: new AbortController().signal,
  progress: () => Promise.resolve()
}

const spec = (value: unknown) =>
  Either.getOrElse(normalizeTimeout(value), (problem) => {
    throw new Error(problem)
  })

describe("normalizeTimeout", () => {
  it("maps omitted, numbers, null and callbacks", () => {
    expect(spec(undefined)).toEqual({ _tag: "Default" })
    expect(spec(5_000)).toEqual({ _tag: "Fixed", ms: 5_000 })
    expect(spec(0.5)).toEqual({ _tag: "Fixed", ms: 0.5 })
    expect(spec(null)).toEqual({ _tag: "None" })
    expect(spec(() => null)._tag).toBe("Computed")
  })

  it.each([
    0,
    -1,
    -0.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    "1000",
    true,
    {},
    [],
    10n
  ])("rejects %s with a clear error", (value) => {
    const result = normalizeTimeout(value)
    expect(Either.isLeft(result)).toBe(true)
    expect(Either.isLeft(result) && result.left).toMatch(
      /^timeoutMs must be a positive finite number of milliseconds or null, got /
    )
  })

  it("names what it got", () => {
    expect(normalizeTimeout("1000")).toEqual(Either.left(expect.stringContaining('the string "1000"')))
    expect(normalizeTimeout(Number.NaN)).toEqual(Either.left(expect.stringContaining("got NaN")))
  })
})

describe("resolveTimeout", () => {
  it.effect("fixed, default and null resolve without calling anything", () =>
    Effect.gen(function* () {
      expect(yield* resolveTimeout(spec(undefined), context)).toBe(DEFAULT_TIMEOUT_MS)
      expect(DEFAULT_TIMEOUT_MS).toBe(15 * 60_000)
      expect(yield* resolveTimeout(spec(undefined), context, 1_000)).toBe(1_000)
      expect(yield* resolveTimeout(spec(42), context)).toBe(42)
      expect(yield* resolveTimeout(spec(null), context)).toBeNull()
    })
  )

  it.effect("callbacks: sync or async, number or null, reading the context", () =>
    Effect.gen(function* () {
      const fromInput = (ctx: StepContext) => (ctx.input as { limit: number }).limit
      expect(yield* resolveTimeout(spec(fromInput), context)).toBe(1234)
      expect(
        yield* resolveTimeout(
          spec(() => null),
          context
        )
      ).toBeNull()
      expect(
        yield* resolveTimeout(
          spec(async () => 99),
          context
        )
      ).toBe(99)
      expect(
        yield* resolveTimeout(
          spec(async () => null),
          context
        )
      ).toBeNull()
    })
  )

  it.effect("callbacks returning invalid values, throwing or rejecting fail clearly", () =>
    Effect.gen(function* () {
      const fail = (callback: unknown) =>
        Effect.map(Effect.flip(resolveTimeout(spec(callback), context)), (error) => error.message)
      expect(yield* fail(() => 0)).toMatch(/returned an invalid value: .*got 0/)
      expect(yield* fail(() => -5)).toMatch(/invalid value/)
      expect(yield* fail(() => Number.NaN)).toMatch(/got NaN/)
      expect(yield* fail(() => Number.POSITIVE_INFINITY)).toMatch(/got Infinity/)
      expect(yield* fail(() => "5000")).toMatch(/the string "5000"/)
      expect(yield* fail(() => undefined)).toMatch(/got undefined/)
      expect(yield* fail(async () => 0)).toMatch(/invalid value/)
      expect(
        yield* fail(() => {
          throw new Error("boom")
        })
      ).toBe("timeoutMs callback threw: boom")
      expect(yield* fail(() => Promise.reject(new Error("nope")))).toBe("timeoutMs callback rejected: nope")
    })
  )

  it.effect("a callback that takes longer than 30 s fails at exactly 30 s", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        resolveTimeout(
          spec(() => new Promise<number>(() => {})),
          context
        )
      )
      yield* TestClock.adjust(TIMEOUT_CALLBACK_LIMIT_MS - 1)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      const exit = yield* Fiber.await(fiber)
      expect(exit).toEqual(Exit.fail(new TimeoutCallbackFailed({ reason: "tooSlow", detail: "" })))
      expect(new TimeoutCallbackFailed({ reason: "tooSlow", detail: "" }).message).toBe(
        "timeoutMs callback did not resolve within 30 s"
      )
    })
  )
})

describe("sleepMillis", () => {
  it.effect("fires for limits beyond the host timer range", () =>
    Effect.gen(function* () {
      const long = 2 ** 31 + 10_000
      const fiber = yield* Effect.fork(sleepMillis(long))
      yield* TestClock.adjust(2 ** 31)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(10_000)
      expect(Exit.isSuccess(yield* Fiber.await(fiber))).toBe(true)
    })
  )
})
