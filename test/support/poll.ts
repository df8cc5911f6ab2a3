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
