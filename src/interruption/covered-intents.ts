/**
 * Answering the intents a run's end covers (`coveredByEnd` in `run-debts.ts`) with the message
 * that answered the end: each is resolved with that message's resolution and identity, so the
 * model gets one successor for the run and the store says which message it was. Only the
 * store's own claim and resolve are used, so every backend behaves alike, and a pending intent
 * another claimant holds (a delivery in flight) is left to it.
 */
import { randomUUID } from "node:crypto"
import { Effect, Option } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import type { EndAnswer } from "./run-debts.ts"

/** How long the claim that resolves a covered intent lives (it is resolved at once). */
const COVER_CLAIM_MS = 10_000

/**
 * Resolve those of `targets` that are still pending with `answer`. Claims take a run's oldest
 * pending intent first: the pass stops at one that is not a target (it is released; a later
 * pass retries once it is resolved). Returns the IDs resolved here.
 */
export const answerCovered = (
  run: { readonly runId: string; readonly targetSessionId: string },
  targets: ReadonlyArray<TurnIntent>,
  answer: EndAnswer
): Effect.Effect<ReadonlyArray<string>, StoreFailure | InvalidInput, TurnIntentStore> =>
  Effect.gen(function* () {
    const intents = yield* TurnIntentStore
    const ids = new Set(targets.filter((intent) => intent.resolvedAt === null).map((i) => i.intentId))
    const token = `reconcile:${randomUUID()}`
    const resolved: Array<string> = []
    while (resolved.length < ids.size) {
      const claimed = yield* intents.claimForRun({ ...run, token, leaseMs: COVER_CLAIM_MS })
      if (Option.isNone(claimed)) break
      const intentId = claimed.value.intentId
      if (!ids.has(intentId)) {
        yield* intents.release({ intentId, token })
        break
      }
      const done = yield* intents
        .resolve({ intentId, token, resolution: answer.resolution, messageId: answer.messageId })
        .pipe(
          Effect.as(true),
          Effect.catchTags({
            ClaimNotHeld: () => Effect.succeed(false),
            IntentNotFound: () => Effect.succeed(false)
          })
        )
      if (!done) break
      resolved.push(intentId)
    }
    return resolved
  })
