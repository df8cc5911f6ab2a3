/**
 * The runner's settles: every end carries the runner's outstanding abort (see `RunTransition`),
 * so when the abort-time provenance write failed the row still names the intent the terminal
 * event reuses, and an abort a prompt already answered whose clear did not land, to clear it;
 * and every settle is retried while the run is still this runner's (`settleWhileOwned`), so a
 * store fault that heals keeps the outcome the runner acted on.
 */
import { Clock, Effect, Ref } from "effect"
import type { ActiveRun, RunnerDeps } from "./active-run.ts"
import { settleWhileOwned } from "./store-retry.ts"

export const withRunnerSettle = (deps: RunnerDeps, run: ActiveRun): RunnerDeps => {
  // Past its lease another process may already run the run: a late end must not land then.
  const owned = Effect.all([deps.closing, Ref.get(run.memory), Clock.currentTimeMillis]).pipe(
    Effect.map(([closing, memory, now]) => !closing && !memory.claimGone && now < memory.leaseUntil)
  )
  const settle = settleWhileOwned(deps.store.settle, {
    schedule: deps.settleRetry,
    leaseMs: deps.settings.leaseMs,
    owned
  })
  return {
    ...deps,
    store: {
      ...deps.store,
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
