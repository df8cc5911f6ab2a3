/**
 * A virtual clock for the simulation. Like `TestClock`, time only moves when the schedule says
 * so and sleepers wake in order of their deadline; unlike it, advancing does not wait for fibers
 * with real timers, so one schedule runs in milliseconds and stays deterministic.
 *
 * `activity` counts scheduling-relevant events (sleeps registered, wrapped store and session
 * calls); `quiesce` yields until it stops changing, i.e. until every fiber is blocked.
 */
import { Clock, Deferred, Duration, Effect } from "effect"

interface Sleeper {
  readonly at: number
  readonly seq: number
  readonly wake: Deferred.Deferred<void>
}

export interface SimClock extends Clock.Clock {
  /** Move time forward by `ms`, waking each sleeper at its own deadline, in order. */
  readonly advance: (ms: number) => Effect.Effect<void>
  /** Let every runnable fiber run until none makes progress. */
  readonly quiesce: Effect.Effect<void>
  /** Note progress (wrappers call it around store and session calls). */
  readonly touch: () => void
  readonly now: () => number
}

/** A fixed, arbitrary epoch: ISO timestamps in the store stay realistic and reproducible. */
export const SIM_EPOCH = Date.UTC(2026, 7, 21, 8, 0, 0)

export const makeSimClock = (start = SIM_EPOCH): SimClock => {
  let now = start
  let seq = 0
  let activity = 0
  let sleepers: Sleeper[] = []

  const touch = () => {
    activity++
  }

  const quiesce = Effect.gen(function* () {
    let quiet = 0
    let last = -1
    for (let i = 0; i < 5_000 && quiet < 8; i++) {
      yield* Effect.yieldNow()
      if (activity === last) quiet++
      else {
        quiet = 0
        last = activity
      }
    }
  })

  const sleep = (duration: Duration.Duration): Effect.Effect<void> =>
    Effect.suspend(() => {
      touch()
      const ms = Duration.toMillis(duration)
      if (ms <= 0) return Effect.yieldNow()
      return Effect.flatMap(Deferred.make<void>(), (wake) => {
        const sleeper: Sleeper = { at: now + ms, seq: seq++, wake }
        sleepers.push(sleeper)
        return Deferred.await(wake).pipe(
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              sleepers = sleepers.filter((s) => s !== sleeper)
            })
          )
        )
      })
    })

  const advance = (ms: number): Effect.Effect<void> =>
    Effect.gen(function* () {
      const end = now + Math.max(0, ms)
      for (;;) {
        yield* quiesce
        const due = sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0]
        if (due === undefined) break
        sleepers = sleepers.filter((s) => s !== due)
        now = Math.max(now, due.at)
        touch()
        yield* Deferred.succeed(due.wake, undefined)
      }
      now = end
      yield* quiesce
    })

  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => now,
    currentTimeMillis: Effect.sync(() => now),
    unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
    sleep,
    advance,
    quiesce,
    touch,
    now: () => now
  }
}
