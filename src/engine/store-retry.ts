/**
 * The runner's fenced writes, retried while another process holds the database's write lock
 * past the busy budget. Without this a lock held for a few seconds would stop the runner with
 * its claim still set, leaving the run `running` until the lease expires. Only lock failures
 * are retried (a retry cannot fix a read-only file or a lost claim).
 */
import { Effect } from "effect"
import { TimingPolicy } from "../delivery/timing-policy.ts"
import { isLockFailure } from "../domain/errors.ts"
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

export const withLockRetries = (store: RunStoreService): RunStoreService => ({
  ...store,
  startStep: (fence, input) => retrying(store.startStep(fence, input)),
  openRequest: (fence, input) => retrying(store.openRequest(fence, input)),
  clearInterruption: (fence) => retrying(store.clearInterruption(fence)),
  submit: (fence, input) => retrying(store.submit(fence, input)),
  settle: (fence, settlement) => retrying(store.settle(fence, settlement))
})
