/**
 * Abort ordering for an active workflow turn. The publisher records abort provenance on the run
 * before publishing (the event carries it); then, in this order:
 *
 * 1. build the source event and intent IDs from that provenance;
 * 2. try to persist the intent, bounded in time, so a slow or failing store cannot hold the
 *    abort back by more than `persistTimeoutMs`;
 * 3. record the intent in system-abort bookkeeping;
 * 4. abort the turn — always, whatever happened before.
 *
 * A failed persist is returned (not raised): terminal handling retries the same intent ID.
 */
import { Cause, Duration, Effect, Exit } from "effect"
import type { IntentRequest } from "../domain/intent-request.ts"
import { PiSession } from "../session/pi-session.ts"
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

export const abortActiveTurn = (
  request: IntentRequest,
  options: { readonly persistTimeoutMs: number }
): Effect.Effect<AbortOutcome, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Effect.gen(function* () {
    const store = yield* TurnIntentStore
    const session = yield* PiSession
    const bookkeeping = yield* AbortBookkeeping
    const identified = yield* Effect.exit(identify(request))
    let outcome: AbortOutcome
    if (Exit.isFailure(identified)) {
      outcome = { intentId: null, persisted: false, error: describeCause(identified.cause) }
    } else {
      const persisted = yield* store.ensure(identified.value.ensure).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(options.persistTimeoutMs),
          onTimeout: () => new Error(`store did not answer within ${options.persistTimeoutMs} ms`)
        }),
        Effect.exit
      )
      outcome = {
        intentId: identified.value.intentId,
        persisted: Exit.isSuccess(persisted),
        error: Exit.isFailure(persisted) ? describeCause(persisted.cause) : null
      }
    }
    // Without an ID there is nothing to resolve, but the turn is still a system abort in flight.
    yield* bookkeeping.record(outcome.intentId ?? `unidentified:${request.run.runId}`)
    yield* session.abort
    return outcome
  }).pipe(
    // A defect in the steps above must not leave the turn running: abort anyway.
    Effect.catchAllCause((cause) =>
      Effect.gen(function* () {
        const session = yield* PiSession
        yield* session.abort
        return { intentId: null, persisted: false, error: Cause.pretty(cause).slice(0, 300) }
      })
    )
  )
