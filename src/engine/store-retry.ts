/**
 * How the engine calls the run store:
 *
 * - `typedStore`: a store call that throws (a bug, a broken driver) is the typed `StoreFailure`
 *   it stands for, never a defect, so every caller handles it like any other store failure
 *   (a readable reply, a logged renewal failure, a runner that keeps its claim).
 * - `withLockRetries`: the runner's fenced writes (`startStep`, `openRequest`,
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
import { Duration, Effect, Schedule } from "effect"
import { TimingPolicy } from "../delivery/timing-policy.ts"
import { isLockFailure, StoreFailure } from "../store/store-errors.ts"
import type { RunStoreService } from "../store/run-store.ts"

/** Retries after the first attempt in the default policy (each attempt already waits the busy budget). */
export const LOCK_RETRIES = 4

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
    control: (fence) => typed("control")(store.control(fence)),
    startStep: (fence, input) => typed("startStep")(store.startStep(fence, input)),
    openRequest: (fence, input) => typed("openRequest")(store.openRequest(fence, input)),
    recordInterruption: (fence, p) => typed("recordInterruption")(store.recordInterruption(fence, p)),
    recordHandoff: (runId, p, options) => typed("recordHandoff")(store.recordHandoff(runId, p, options)),
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

export const withLockRetries = (store: RunStoreService): RunStoreService => ({
  ...store,
  startStep: (fence, input) => retrying(store.startStep(fence, input)),
  openRequest: (fence, input) => retrying(store.openRequest(fence, input)),
  clearInterruption: (fence) => retrying(store.clearInterruption(fence)),
  submit: (fence, input) => retrying(store.submit(fence, input)),
  settle: (fence, settlement) => retrying(store.settle(fence, settlement))
})

/**
 * `settle`, retried on any store failure on `schedule` (the engine's `TimingPolicy.settleRetry`)
 * while `owned` says the run is still this process's, for at most one lease.
 */
export const settleWhileOwned =
  (
    settle: RunStoreService["settle"],
    options: {
      readonly schedule: Schedule.Schedule<unknown, unknown>
      readonly leaseMs: number
      readonly owned: Effect.Effect<boolean>
    }
  ): RunStoreService["settle"] =>
  (fence, settlement) =>
    Effect.retry(settle(fence, settlement), {
      schedule: Schedule.upTo(options.schedule, Duration.millis(options.leaseMs)),
      while: (error) => (error._tag === "StoreFailure" ? options.owned : false)
    })
