/** Waiting on the real clock for work other fibers do (engine runners, fallback passes). */
import { Effect, Schedule } from "effect"

/** Poll `effect` until `check` passes, failing (as a defect naming `what`) after ~8 s. */
export const until = <A, E>(effect: Effect.Effect<A, E>, check: (a: A) => boolean, what: string) =>
  effect.pipe(
    Effect.orDie,
    Effect.filterOrFail(check, () => new Error(`not reached: ${what}`)),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("8 seconds"))),
    Effect.orDie
  )

/**
 * The same poll on Node's own timers (10 ms apart, ~4 s), for tests whose Effect clock is a
 * TestClock that nothing advances meanwhile.
 */
export const untilOnRealTimers = <A, E>(
  effect: Effect.Effect<A, E>,
  check: (a: A) => boolean,
  what: string
) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      const value = yield* Effect.orDie(effect)
      if (check(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.dieMessage(`not reached: ${what}`)
  })
