/**
 * How the engine calls the run store:
 *
 * - `typedStore`: a store call that throws (a bug, a broken driver) is the typed `StoreFailure`
 *   it stands for, never a defect, so every caller handles it like any other store failure
 *   (a readable reply, a logged renewal failure, a runner that keeps its claim).
 * - `withLockRetries`: the runner's fenced writes (`startStep`, `recordLimit`, `openRequest`,
 *   `clearInterruption`, `submit`, `settle`), retried on `TimingPolicy.storeRetry` while another
 *   process holds the database's write lock past the busy budget. Only lock failures are retried
 *   here: a write before an outcome answers any other failure to its caller.
 * - `settleWhileOwned`: `settle` writes an outcome the runner already acted on (a turn it
 *   aborted, a timeout it saw, a cancel it applied, a move to the next step). Losing that write
 *   would lose the decided end: the run would stay `running` until a takeover reruns the step.
 *   So, beyond its lock retries, it is retried on every `StoreFailure` (a lock, read-only, a
 *   throw, a hang) on `TimingPolicy.settleRetry`, for as long as the run is still this
 *   process's: never after an answer that the claim is gone (`ClaimLost`, which no retry can
 *   fix), not once a renewal found the claim gone or the engine closes (a shut-down or killed
 *   process ends its retries with it, and the run is taken over; a park at shutdown still gets
 *   its lock retries), and not past this runner's lease (the claim's expiry, then each
 *   successful renewal's start plus the lease): from then on another process may run the run,
 *   and an end landing late would let this runner go on beside it. One lease since the first
 *   failure caps it as well.
 */
import { Clock, Duration, Effect, Ref, Schedule } from "effect"
import { TimingPolicy } from "../domain/timing-policy.ts"
import { isLockFailure, StoreFailure } from "../store/store-errors.ts"
import type { ClaimLost, Fence, RunStoreService } from "../store/run-store.ts"
import type { ActiveRun, RunnerDeps } from "./active-run.ts"

/** A store whose every method returns an effect that may fail with `StoreFailure`. */
type StoreMethods<S> = {
  readonly [K in keyof S]: S[K] extends (...args: infer P) => Effect.Effect<infer A, infer E, infer R>
    ? StoreFailure extends E
      ? (...args: P) => Effect.Effect<A, E, R>
      : never
    : never
}

/** What happens to the effect of one store call, named by its method; errors stay the call's own. */
type Around = <A, E, R>(
  operation: string,
  effect: Effect.Effect<A, E | StoreFailure, R>
) => Effect.Effect<A, E | StoreFailure, R>

/**
 * The store with `around` applied to every method's effect, whatever methods the contract has:
 * adding a store method needs no edit here.
 */
export const aroundEach = <S extends StoreMethods<S>>(store: S, around: Around): S => {
  const wrapped: Record<string, unknown> = {}
  for (const [operation, method] of Object.entries(store)) {
    wrapped[operation] =
      typeof method === "function"
        ? (...args: ReadonlyArray<unknown>) => around(operation, Reflect.apply(method, store, args))
        : method
  }
  // Each entry keeps its method's signature: `around` returns the effect's own A, E and R.
  return wrapped as S
}

/** A defect (a throw in the store or its driver) as the typed `StoreFailure` it stands for. */
const defectAsStoreFailure: Around = (operation, effect) =>
  Effect.catchAllDefect(effect, (defect) =>
    Effect.fail(
      new StoreFailure({
        operation,
        message: defect instanceof Error ? defect.message : String(defect),
        cause: defect
      })
    )
  )

export const typedStore = (store: RunStoreService): RunStoreService => aroundEach(store, defectAsStoreFailure)

/** The runner's fenced writes: lock failures retried (see the module comment). */
const LOCK_RETRIED: ReadonlySet<string> = new Set<keyof RunStoreService>([
  "startStep",
  "recordLimit",
  "openRequest",
  "clearInterruption",
  "submit",
  "settle",
  "advance",
  "wait",
  "answerWait",
  "expireWait"
])

/** Retried by `TimingPolicy.storeRetry` (default: exponential from 100 ms, 4 times). */
const retryingLocks: Around = (operation, effect) =>
  LOCK_RETRIED.has(operation)
    ? Effect.flatMap(TimingPolicy, (policy) =>
        Effect.retry(effect, {
          schedule: policy.storeRetry,
          while: (error) => error instanceof StoreFailure && isLockFailure(error)
        })
      )
    : effect

export const withLockRetries = (store: RunStoreService): RunStoreService => aroundEach(store, retryingLocks)

/**
 * `settle`, retried on any store failure on `schedule` (the engine's `TimingPolicy.settleRetry`)
 * while `owned` says the run is still this process's, for at most one lease.
 */
export const settleWhileOwned =
  <S, A>(
    settle: (fence: Fence, settlement: S) => Effect.Effect<A, ClaimLost | StoreFailure>,
    options: {
      readonly schedule: Schedule.Schedule<unknown, unknown>
      readonly leaseMs: number
      readonly owned: Effect.Effect<boolean>
    }
  ): ((fence: Fence, settlement: S) => Effect.Effect<A, ClaimLost | StoreFailure>) =>
  (fence, settlement) =>
    Effect.retry(settle(fence, settlement), {
      schedule: Schedule.upTo(options.schedule, Duration.millis(options.leaseMs)),
      while: (error) => (error._tag === "StoreFailure" ? options.owned : false)
    })

/**
 * The runner's settles: every end carries the runner's outstanding abort (see `RunTransition`),
 * so when the abort-time provenance write failed the row still names the intent the terminal
 * event reuses, and an abort a prompt already answered whose clear did not land, to clear it;
 * and every settle is retried while the run is still this runner's (`settleWhileOwned`), so a
 * store fault that heals keeps the outcome the runner acted on.
 */
export const withRunnerSettle = (deps: RunnerDeps, run: ActiveRun): RunnerDeps => {
  // Past its lease another process may already run the run: a late end must not land then.
  const owned = Effect.all([deps.closing, Ref.get(run.memory), Clock.currentTimeMillis]).pipe(
    Effect.map(([closing, memory, now]) => !closing && !memory.claimGone && now < memory.leaseUntil)
  )
  const retry = { schedule: deps.settleRetry, leaseMs: deps.settings.leaseMs, owned }
  const settle = settleWhileOwned(deps.store.settle, retry)
  return {
    ...deps,
    store: {
      ...deps.store,
      advance: settleWhileOwned(deps.store.advance, retry),
      settle: (fence, settlement) => {
        const next = settlement.next
        if (next._tag !== "End") return settle(fence, settlement)
        return Effect.flatMap(Ref.get(run.memory), ({ outstanding, answered }) =>
          settle(fence, {
            ...settlement,
            next: {
              ...next,
              ...(outstanding === null ? {} : { abort: outstanding }),
              ...(answered === null ? {} : { answered })
            }
          })
        )
      }
    }
  }
}
