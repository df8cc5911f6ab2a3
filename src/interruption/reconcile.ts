/**
 * Reconciliation of run debts (see `run-debts.ts` for the policy): after a crash between two
 * durable writes — the run's end and its intent, or an abort's intent and the run's end — the
 * debt is still owed. Each pass, for the session's recent runs:
 *
 * - an ended run whose end owes an intent gets it, eligible (same deterministic ID the engine
 *   would have used, so an intent that exists is reused, never doubled);
 * - an ended run whose row reuses an abort that a workflow prompt answered (resolved from the
 *   branch after the end) gets the intent its end owes of its own;
 * - a pending ineligible intent whose run has ended becomes eligible (a completed run's intent
 *   whose presentation never arrived included: its fallback carries the terminal decision);
 * - but a claim-loss intent the run's end covers never does: once the end's message is known it
 *   is resolved with that message (and an end whose covered intent a presentation or fallback
 *   already answered is resolved with that one), so the run gets one successor.
 *
 * Idempotent; store failures are returned typed and the next pass retries.
 */
import { Effect, Option } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { IntentRequest } from "../domain/event-policy.ts"
import { RunStore, type RunRecord } from "../store/run-store.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import {
  completedOwesIntent,
  coveredByEnd,
  type EndAnswer,
  endAnswer,
  identify,
  owedIntent,
  owedWithoutAnswered,
  strandedIntents
} from "./run-debts.ts"
import { randomUUID } from "node:crypto"
import type { TurnIntent } from "../domain/turn-intent.ts"

/** How many of the session's newest runs one pass looks at. */
export const RECONCILE_RUNS = 100

export interface ReconcileReport {
  /** Intents created (eligible) for ended runs that had none. */
  readonly created: ReadonlyArray<string>
  /** Pending intents made eligible because their run has ended. */
  readonly madeEligible: ReadonlyArray<string>
  /** Intents resolved with the message that answered their run's end (covered claim losses). */
  readonly answered: ReadonlyArray<string>
}

export const reconcileDebts = (
  sessionId: string,
  /** Runs whose presentation the session branch shows (presented before they owned an intent). */
  presentedInBranch: ReadonlySet<string> = new Set()
): Effect.Effect<ReconcileReport, StoreFailure | InvalidInput, RunStore | TurnIntentStore> =>
  Effect.gen(function* () {
    const runs = yield* RunStore
    const intents = yield* TurnIntentStore
    const records = yield* runs.listBySession(sessionId, RECONCILE_RUNS)
    const pending = yield* intents.list({ targetSessionId: sessionId, state: "pending", limit: 1_000 })
    const created: Array<string> = []
    const madeEligible: Array<string> = []
    const answered: Array<string> = []
    /** Make one intent eligible and note it (one gone meanwhile or refusing the facts: nothing to do). */
    const makeEligible = (intentId: string, facts?: IntentRequest["facts"]) =>
      intents
        .makeEligible(facts === undefined ? { intentId } : { intentId, facts })
        .pipe(
          Effect.catchTags({ IntentNotFound: () => Effect.void, InvalidFacts: () => Effect.void }),
          Effect.zipRight(Effect.sync(() => madeEligible.push(intentId)))
        )
    // Each ended run's owed intent: the claim-loss intents its end covers wait for its message.
    const owedIds = new Map<string, string>()
    /** Pay one debt of an ended run: make its intent eligible, or create it eligible. */
    const pay = (
      record: RunRecord,
      request: IntentRequest,
      mayBeAnswered: boolean
    ): Effect.Effect<void, StoreFailure | InvalidInput, TurnIntentStore> =>
      Effect.gen(function* () {
        const identified = yield* Effect.either(identify(request))
        if (identified._tag === "Left") return
        const { intentId, ensure } = identified.right
        const existing = yield* intents.get(intentId)
        if (Option.isSome(existing)) {
          const intent = existing.value
          // The end reused an abort that a prompt had answered: the end's own debt is still owed.
          if (mayBeAnswered && intent.resolution === "workflowPrompt") {
            const own = owedWithoutAnswered(record)
            if (own !== null) yield* pay(record, own, false)
            return
          }
          owedIds.set(record.runId, intentId)
          const covered = pending.filter((other) => coveredByEnd(other, record, intentId))
          if (intent.resolvedAt !== null) {
            const answer = endAnswer(record, intentId, [intent])
            if (covered.length > 0 && answer !== null)
              answered.push(...(yield* answerCovered(record, covered, answer)))
            return
          }
          if (intent.eligibleAt !== null) return
          // A presentation may have resolved a covered intent (the run's oldest) instead: it is
          // the end's message too.
          const siblings = yield* intents.list({ runId: record.runId, state: "resolved", limit: 100 })
          const answer = endAnswer(record, intentId, siblings)
          if (answer !== null) {
            answered.push(...(yield* answerCovered(record, [intent, ...covered], answer)))
            return
          }
          yield* makeEligible(intentId, request.facts)
          return
        }
        if (
          record.state === "completed" &&
          !completedOwesIntent(record, yield* runs.events(record.runId), presentedInBranch)
        ) {
          // Presented without an intent (an earlier version): nothing answers a covered intent
          // here, so it keeps its own fallback rather than wait forever.
          return
        }
        // The run has ended and nothing delivered its turn: the fallback may go at once.
        const stored = yield* intents.ensure({ ...ensure, eligible: true }).pipe(
          Effect.catchTags({
            IdentityCollision: () => Effect.succeed(null),
            InvalidFacts: () => Effect.succeed(null)
          })
        )
        if (stored === null) return
        created.push(intentId)
        // Only an end intent that exists shares its message with the intents it covers.
        owedIds.set(record.runId, intentId)
      })
    for (const record of records) {
      const request = owedIntent(record)
      if (request !== null) yield* pay(record, request, record.abortPending)
    }
    const byId = new Map(records.map((record) => [record.runId, record]))
    for (const intent of strandedIntents(pending, byId, owedIds)) {
      if (madeEligible.includes(intent.intentId) || answered.includes(intent.intentId)) continue
      yield* makeEligible(intent.intentId)
    }
    return { created, madeEligible, answered }
  })

// Answering the intents a run's end covers (`coveredByEnd` in `run-debts.ts`) with the message
// that answered the end: each is resolved with that message's resolution and identity, so the
// model gets one successor for the run and the store says which message it was. Only the
// store's own claim and resolve are used, so every backend behaves alike, and a pending intent
// another claimant holds (a delivery in flight) is left to it.

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
