/**
 * A virtual clock for the simulation. Like `TestClock`, time only moves when the schedule says
 * so and sleepers wake in order of their deadline; unlike it, advancing does not wait for fibers
 * with real timers, so one schedule runs in milliseconds and stays deterministic.
 *
 * `activity` counts scheduling-relevant events (sleeps registered, wrapped store and session
 * calls); `quiesce` yields until it stops changing, i.e. until every fiber is blocked.
 *
 * `forProcess` gives one simulated process its own view of this clock. Once the process is
 * killed its time no longer matters to anyone: its pending sleeps wake at once and later ones
 * return at once, its time running ahead by what it slept. So whatever its fibers still do while
 * its scope closes (a retry that waits between tries) ends by its own bounds instead of waiting
 * for a clock nobody moves for a dead process.
 */
import { Clock, Deferred, Duration, Effect, Exit } from "effect"

interface Sleeper {
  readonly at: number
  readonly seq: number
  readonly wake: Deferred.Deferred<void>
  /** The process that sleeps (null: the schedule itself). */
  readonly owner: number | null
}

/** One process's view of the clock (`SimClock.forProcess`). */
export interface ProcessClock {
  readonly clock: Clock.Clock
  /** The process died: wake its sleepers now; from now on its sleeps do not wait. */
  readonly kill: () => void
}

export interface SimClock extends Clock.Clock {
  /** Move time forward by `ms`, waking each sleeper at its own deadline, in order. */
  readonly advance: (ms: number) => Effect.Effect<void>
  /** Let every runnable fiber run until none makes progress. */
  readonly quiesce: Effect.Effect<void>
  /** Note progress (wrappers call it around store and session calls). */
  readonly touch: () => void
  readonly now: () => number
  readonly forProcess: () => ProcessClock
}

/** A fixed, arbitrary epoch: ISO timestamps in the store stay realistic and reproducible. */
export const SIM_EPOCH = Date.UTC(2026, 7, 21, 8, 0, 0)

export const makeSimClock = (start = SIM_EPOCH): SimClock => {
  let now = start
  let seq = 0
  let activity = 0
  let sleepers: Sleeper[] = []
  let owners = 0

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

  const sleepAs =
    (owner: number | null) =>
    (duration: Duration.Duration): Effect.Effect<void> =>
      Effect.suspend(() => {
        touch()
        const ms = Duration.toMillis(duration)
        if (ms <= 0) return Effect.yieldNow()
        return Effect.flatMap(Deferred.make<void>(), (wake) => {
          const sleeper: Sleeper = { at: now + ms, seq: seq++, wake, owner }
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
  const sleep = sleepAs(null)

  const forProcess = (): ProcessClock => {
    const owner = owners++
    let dead = false
    /** How far a dead process's time ran ahead of the shared time. */
    let ahead = 0
    const current = () => now + ahead
    const shared = sleepAs(owner)
    return {
      clock: {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: current,
        currentTimeMillis: Effect.sync(current),
        unsafeCurrentTimeNanos: () => BigInt(current()) * 1_000_000n,
        currentTimeNanos: Effect.sync(() => BigInt(current()) * 1_000_000n),
        sleep: (duration) =>
          Effect.suspend(() => {
            if (!dead) return shared(duration)
            ahead += Math.max(0, Duration.toMillis(duration))
            return Effect.yieldNow()
          })
      },
      kill: () => {
        dead = true
        const own = sleepers.filter((s) => s.owner === owner)
        sleepers = sleepers.filter((s) => s.owner !== owner)
        for (const s of own) {
          ahead = Math.max(ahead, s.at - now)
          Deferred.unsafeDone(s.wake, Exit.void)
        }
      }
    }
  }

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
    now: () => now,
    forProcess
  }
}
