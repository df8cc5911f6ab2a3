/**
 * How the engine calls the run store:
 *
 * - `typedStore`: a store call that throws (a bug, a broken driver) is the typed `StoreFailure`
 *   it stands for, never a defect, so every caller handles it like any other store failure
 *   (a readable reply, a logged renewal failure, a runner that keeps its claim).
 * - `withLockRetries`: the runner's fenced writes, retried while another process holds the
 *   database's write lock past the busy budget. Without this a lock held for a few seconds would
 *   stop the runner with its claim still set, leaving the run `running` until the lease expires.
 *   Only lock failures are retried (a retry cannot fix a lost claim).
 * - `settle` ends or moves the run after an outcome the runner already acted on (a turn it
 *   aborted, a timeout it saw): it is retried on any store failure for up to one lease, so a
 *   fault that heals within the lease still ends the run as decided, with its successor, instead
 *   of leaving it to a takeover that would rerun the step.
 */
import { Duration, Effect, Schedule } from "effect"
import { TimingPolicy } from "../delivery/timing-policy.ts"
import { isLockFailure, StoreFailure } from "../store/store-errors.ts"
import type { RunStoreService } from "../store/run-store.ts"

/** Retries after the first attempt in the default policy (each attempt already waits the busy budget). */
export const LOCK_RETRIES = 4
/** Retries of a run's settle that keeps meeting a lock (about 10 s with the pauses below). */
export const SETTLE_RETRIES = 12
/** Longest pause between two attempts of a settle that keeps failing. */
export const SETTLE_RETRY_CAP_MS = 1_000

/** Retried by `TimingPolicy.storeRetry` (default: exponential from 100 ms, `LOCK_RETRIES` times). */
const retrying = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(TimingPolicy, (policy) =>
    Effect.retry(effect, { schedule: policy.storeRetry, while: isLockFailure })
  )

const defectAsStoreFailure =
  (operation: string) =>
  <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | StoreFailure> =>
    Effect.catchAllDefect(effect, (defect) =>
      Effect.fail(
        new StoreFailure({
          operation,
          message: defect instanceof Error ? defect.message : String(defect),
          cause: defect
        })
      )
    )

export const typedStore = (store: RunStoreService): RunStoreService => {
  const typed = defectAsStoreFailure
  return {
    reserve: (run) => typed("reserve")(store.reserve(run)),
    nextQueued: (sessionId) => typed("nextQueued")(store.nextQueued(sessionId)),
    claim: (input) => typed("claim")(store.claim(input)),
    renew: (fence, leaseMs) => typed("renew")(store.renew(fence, leaseMs)),
    startStep: (fence, input) => typed("startStep")(store.startStep(fence, input)),
    openRequest: (fence, input) => typed("openRequest")(store.openRequest(fence, input)),
    recordInterruption: (fence, p) => typed("recordInterruption")(store.recordInterruption(fence, p)),
    recordHandoff: (runId, p) => typed("recordHandoff")(store.recordHandoff(runId, p)),
    clearInterruption: (fence) => typed("clearInterruption")(store.clearInterruption(fence)),
    submit: (fence, input) => typed("submit")(store.submit(fence, input)),
    settle: (fence, settlement) => typed("settle")(store.settle(fence, settlement)),
    requestPause: (runId) => typed("requestPause")(store.requestPause(runId)),
    withdrawPause: (runId) => typed("withdrawPause")(store.withdrawPause(runId)),
    cancel: (runId, by) => typed("cancel")(store.cancel(runId, by)),
    recordEvent: (runId, event) => typed("recordEvent")(store.recordEvent(runId, event)),
    events: (runId) => typed("events")(store.events(runId)),
    get: (runId) => typed("get")(store.get(runId)),
    listBySession: (sessionId, limit) => typed("listBySession")(store.listBySession(sessionId, limit)),
    list: (query) => typed("list")(store.list(query)),
    steps: (runId) => typed("steps")(store.steps(runId)),
    request: (requestId) => typed("request")(store.request(requestId))
  }
}

export const withLockRetries = (store: RunStoreService, leaseMs: number): RunStoreService => ({
  ...store,
  startStep: (fence, input) => retrying(store.startStep(fence, input)),
  openRequest: (fence, input) => retrying(store.openRequest(fence, input)),
  clearInterruption: (fence) => retrying(store.clearInterruption(fence)),
  submit: (fence, input) => retrying(store.submit(fence, input)),
  settle: (fence, settlement) =>
    Effect.retry(store.settle(fence, settlement), {
      schedule: Schedule.exponential(Duration.millis(100)).pipe(
        Schedule.either(Schedule.spaced(Duration.millis(SETTLE_RETRY_CAP_MS))),
        Schedule.upTo(Duration.millis(leaseMs))
      ),
      times: SETTLE_RETRIES,
      while: isLockFailure
    })
})
