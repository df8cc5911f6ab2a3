/**
 * Node timeouts: load-time normalisation of `timeoutMs`, run-time resolution of callbacks
 * (bounded to 30 s), and the durable deadline a taken-over step keeps. Sleeping goes through
 * Effect's Clock, so tests drive it with TestClock.
 *
 * A step's timeout is a durable deadline: when a run is taken over (its owner died or its lease
 * ran out), the visit the new runner starts for the step that was in flight continues that
 * visit, so its limit counts from when the *first* attempt of the step started (the step rows'
 * `started_at`), not from the takeover (`deadlineOrigin` in domain/step-deadline.ts, `remainingMs`:
 * pure, no clock reads).
 */
import { Clock, Duration, Effect, Either } from "effect"
import type { StepContext, TimeoutMs } from "./definition.ts"
import { TIMEOUT_CALLBACK_LIMIT_MS, TimeoutCallbackFailed } from "./errors.ts"

/** The engine default when a node omits `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 15 * 60_000

export type TimeoutSpec =
  | { readonly _tag: "Default" }
  | { readonly _tag: "Fixed"; readonly ms: number }
  | { readonly _tag: "None" }
  | {
      readonly _tag: "Computed"
      readonly callback: (context: StepContext) => number | null | PromiseLike<number | null>
    }

const describe = (value: unknown): string => {
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`
  if (typeof value === "number") return String(value)
  if (value === undefined) return "undefined"
  return typeof value === "object" ? `a value of type ${value === null ? "null" : "object"}` : typeof value
}

/** A concrete limit: a positive finite number of milliseconds, or null for none. */
export const checkTimeoutValue = (value: unknown): Either.Either<number | null, string> =>
  value === null
    ? Either.right(null)
    : typeof value === "number" && Number.isFinite(value) && value > 0
      ? Either.right(value)
      : Either.left(
          `timeoutMs must be a positive finite number of milliseconds or null, got ${describe(value)}`
        )

/** Load-time: what a node's `timeoutMs` field means. */
export const normalizeTimeout = (value: unknown): Either.Either<TimeoutSpec, string> => {
  if (value === undefined) return Either.right({ _tag: "Default" })
  if (typeof value === "function") {
    // A function's parameters cannot be checked at run time; its result is checked when it runs.
    return Either.right({ _tag: "Computed", callback: value as Exclude<TimeoutMs, number | null> })
  }
  return Either.map(
    checkTimeoutValue(value),
    (ms): TimeoutSpec => (ms === null ? { _tag: "None" } : { _tag: "Fixed", ms })
  )
}

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function"

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * Run-time: the limit of one visit, in milliseconds or null. A callback that throws, rejects,
 * returns an invalid value or takes longer than 30 s fails with a description of the problem.
 */
export const resolveTimeout = (
  spec: TimeoutSpec,
  context: StepContext,
  defaultMs: number = DEFAULT_TIMEOUT_MS
): Effect.Effect<number | null, TimeoutCallbackFailed> => {
  switch (spec._tag) {
    case "Default":
      return Effect.succeed(defaultMs)
    case "Fixed":
      return Effect.succeed(spec.ms)
    case "None":
      return Effect.succeed(null)
    case "Computed":
      return Effect.try({
        try: () => spec.callback(context),
        catch: (error) => new TimeoutCallbackFailed({ reason: "threw", detail: message(error) })
      }).pipe(
        Effect.flatMap((value) =>
          isPromiseLike(value)
            ? Effect.tryPromise({
                try: () => Promise.resolve(value),
                catch: (error) => new TimeoutCallbackFailed({ reason: "rejected", detail: message(error) })
              })
            : Effect.succeed(value)
        ),
        Effect.timeoutFail({
          duration: Duration.millis(TIMEOUT_CALLBACK_LIMIT_MS),
          onTimeout: () => new TimeoutCallbackFailed({ reason: "tooSlow", detail: "" })
        }),
        Effect.flatMap((value) =>
          Either.match(checkTimeoutValue(value), {
            onLeft: (problem) =>
              Effect.fail(new TimeoutCallbackFailed({ reason: "invalidValue", detail: problem })),
            onRight: Effect.succeed
          })
        )
      )
  }
}

// Host timers treat delays beyond 2^31-1 ms as "never"; sleep in chunks so long limits still fire.
const MAX_TIMER_MS = 2 ** 31 - 1

/** Sleep until `ms` milliseconds after the call, measured with the Clock. */
export const sleepMillis = (ms: number): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) => {
    const deadline = start + ms
    const loop: Effect.Effect<void> = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      now >= deadline
        ? Effect.void
        : Effect.zipRight(Effect.sleep(Math.min(deadline - now, MAX_TIMER_MS)), loop)
    )
    return loop
  })

// The durable deadline of a step (what a takeover continues) is pure domain data.
export { deadlineOrigin, SUPERSEDED } from "../domain/step-deadline.ts"

/** What is left of a `timeoutMs` limit that started at `origin` (null: starts now), never negative. */
export const remainingMs = (timeoutMs: number, origin: number | null, now: number): number =>
  origin === null ? timeoutMs : Math.max(0, origin + timeoutMs - now)
