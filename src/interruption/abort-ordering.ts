/**
 * Abort ordering for an active workflow turn. The publisher records abort provenance on the run
 * before publishing (bounded; the event carries it either way); then, in this order:
 *
 * 1. build the source event and intent IDs from that provenance;
 * 2. try to persist the intent, bounded in time, so a slow or failing store cannot hold the
 *    abort back by more than `persistTimeoutMs`;
 * 3. record the intent in system-abort bookkeeping;
 * 4. abort the turn.
 *
 * Steps 3 and 4 are a finalizer of steps 1–2 in an uninterruptible region: they run whatever
 * steps 1–2 do (fail, die, hang past the bound, get interrupted). A failed persist is returned
 * (not raised): terminal handling retries the same intent ID.
 */
import { Data, Duration, Effect, Exit, Ref } from "effect"
import type { IntentRequest } from "../domain/event-policy.ts"
import { PiSession } from "../session/pi-session.ts"
import { ABORT_LOCK_BUDGET_MS, withLockBudget } from "../store/database.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { AbortBookkeeping } from "./abort-bookkeeping.ts"
import { describeCause } from "./describe-failure.ts"
import { identify } from "./intent-ids.ts"

export interface AbortOutcome {
  /** Null only when the IDs could not be derived (invalid run, node or attempt ID). */
  readonly intentId: string | null
  readonly persisted: boolean
  /** Why persisting failed, bounded; null when it succeeded. */
  readonly error: string | null
}

/** The persist step did not answer within its bound. */
export class PersistTimeout extends Data.TaggedError("PersistTimeout")<{ readonly ms: number }> {
  override get message() {
    return `store did not answer within ${this.ms} ms`
  }
}

export const abortActiveTurn = (
  request: IntentRequest,
  options: { readonly persistTimeoutMs: number }
): Effect.Effect<AbortOutcome, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Effect.gen(function* () {
    const store = yield* TurnIntentStore
    const session = yield* PiSession
    const bookkeeping = yield* AbortBookkeeping
    const outcome = yield* Ref.make<AbortOutcome>({
      intentId: null,
      persisted: false,
      error: "the intent was not persisted"
    })
    const persist = Effect.gen(function* () {
      const identified = yield* Effect.exit(identify(request))
      if (Exit.isFailure(identified)) {
        return yield* Ref.set(outcome, {
          intentId: null,
          persisted: false,
          error: describeCause(identified.cause)
        })
      }
      const intentId = identified.value.intentId
      yield* Ref.set(outcome, { intentId, persisted: false, error: "the intent was not persisted" })
      const persisted = yield* store.ensure(identified.value.ensure).pipe(
        // A lock held by another process fails the write well inside the bound (never blocks).
        withLockBudget(ABORT_LOCK_BUDGET_MS),
        Effect.timeoutFail({
          duration: Duration.millis(options.persistTimeoutMs),
          onTimeout: () => new PersistTimeout({ ms: options.persistTimeoutMs })
        }),
        Effect.exit
      )
      yield* Ref.set(outcome, {
        intentId,
        persisted: Exit.isSuccess(persisted),
        error: Exit.isFailure(persisted) ? describeCause(persisted.cause) : null
      })
    })
    // The abort is the finalizer of the persist step: no failure, defect or interruption of
    // persisting can skip it. Persisting itself stays interruptible, so its bound always holds.
    const abort = Effect.gen(function* () {
      const known = yield* Ref.get(outcome)
      // Without an ID there is nothing to resolve, but the turn is still a system abort in flight.
      yield* bookkeeping.record(known.intentId ?? `unidentified:${request.run.runId}`)
      yield* session.abort
    })
    const persistExit = yield* Effect.exit(Effect.ensuring(Effect.interruptible(persist), abort))
    const result = yield* Ref.get(outcome)
    return Exit.isSuccess(persistExit) || result.error !== null
      ? result
      : { ...result, persisted: false, error: describeCause(persistExit.cause) }
  }).pipe(Effect.uninterruptible)

/**
 * Stop the active turn when no intent is owed for it (`AbortOnly`: the new owner's prompt is
 * its successor, or the run ended by the user's direct cancel). The abort is still a system
 * abort in flight until the turn settles, so it is recorded under `key` first: the settle is
 * never taken for the user's Escape, and nothing is sent into the aborting turn.
 */
export const abortWithoutIntent = (key: string): Effect.Effect<void, never, PiSession | AbortBookkeeping> =>
  Effect.gen(function* () {
    yield* (yield* AbortBookkeeping).record(key)
    yield* (yield* PiSession).abort
  }).pipe(Effect.uninterruptible)
