/**
 * Terminal handling for eligible events (terminal run state, handoff with no successor, launch
 * failure, asynchronous failure after a successful start): find or create the deterministic
 * intent, refresh its facts from the observed state and make it fallback-eligible. A completed
 * run's intent is only stored: its presentation resolves it, and reconciliation makes it eligible
 * if that never happens. Retried with a bounded schedule; the result says whether the intent is
 * durable (and eligible, when the request asks for it) now.
 */
import { Duration, Effect, Exit, Schedule } from "effect"
import type { IntentRequest } from "../domain/event-policy.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { describeCause } from "./describe-failure.ts"
import { identify } from "./intent-ids.ts"

export interface TerminalOptions {
  /** Attempts in total (at least 1). */
  readonly attempts: number
  /** First retry delay; doubles per retry. */
  readonly retryBaseMs: number
  /** Bound on one attempt, so a hung store cannot hang terminal handling. */
  readonly attemptTimeoutMs: number
}

export interface TerminalOutcome {
  readonly intentId: string | null
  readonly eligible: boolean
  readonly error: string | null
}

export const persistEligible = (
  request: IntentRequest,
  options: TerminalOptions
): Effect.Effect<TerminalOutcome, never, TurnIntentStore> =>
  Effect.gen(function* () {
    const store = yield* TurnIntentStore
    const identified = yield* Effect.exit(identify(request))
    if (Exit.isFailure(identified)) {
      return { intentId: null, eligible: false, error: describeCause(identified.cause) }
    }
    const { intentId, ensure } = identified.value
    const attempt = store.ensure(ensure).pipe(
      // ensure keeps an existing intent's facts: refresh them from the observed terminal state.
      Effect.zipRight(
        request.eligible ? store.makeEligible({ intentId, facts: request.facts }) : Effect.void
      ),
      Effect.timeoutFail({
        duration: Duration.millis(options.attemptTimeoutMs),
        onTimeout: () => new Error(`store did not answer within ${options.attemptTimeoutMs} ms`)
      })
    )
    const retries = Math.max(0, Math.trunc(options.attempts) - 1)
    const result = yield* attempt.pipe(
      // An identity collision will not heal by retrying.
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(options.retryBaseMs)),
        times: retries,
        while: (error) =>
          !(typeof error === "object" && "_tag" in error && error._tag === "IdentityCollision")
      }),
      Effect.exit
    )
    return Exit.isSuccess(result)
      ? { intentId, eligible: request.eligible, error: null }
      : { intentId, eligible: false, error: describeCause(result.cause) }
  })
