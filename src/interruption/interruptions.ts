/**
 * The live `SourceEvents`: every published event goes through the event policy. Active-turn
 * interruptions run the abort ordering; terminal, handoff and launch-failure events make the
 * deterministic intent eligible; quiet events do nothing. `publish` never fails.
 *
 * When the intent could not be stored at abort time and terminal handling cannot store it
 * either, the user is warned and the warning is returned so the engine records it on the run.
 *
 * Its two paths are below: the abort ordering of an active turn and terminal handling.
 */
import { Cause, Data, Duration, Effect, Exit, Layer, Ref, Schedule } from "effect"
import { decide } from "../domain/event-policy.ts"
import { type IntentRequest, intentRequest } from "../domain/event-policy.ts"
import type { RunRef } from "../domain/event-policy.ts"
import { TimingPolicy, toMillis } from "../domain/timing-policy.ts"
import { PiSession } from "../session/pi-session.ts"
import { ABORT_LOCK_BUDGET_MS, withLockBudget } from "../store/database.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { AbortBookkeeping } from "./abort-bookkeeping.ts"
import { identify } from "./run-debts.ts"
import { SourceEvents, type SourceEventsService } from "./source-events.ts"

/** Terminal handling's settings; the abort's persist bound is `TimingPolicy.abortPersistTimeout`. */
export interface InterruptionsOptions {
  /** Terminal handling retry policy (defaults: 4 attempts, 50 ms doubling, 2 s per attempt). */
  readonly terminal?: Partial<TerminalOptions>
}

const NO_INTENT = { intentId: null, warning: null } as const

/** The user-facing warning when the successor-turn guarantee is lost for one event. */
export const guaranteeLostWarning = (
  request: IntentRequest,
  abortError: string | null,
  terminalError: string
): string =>
  `Pi Workflows could not preserve the successor-turn guarantee for workflow run ${request.run.runId} ` +
  `(${request.run.workflowName}, ${request.cause}): the turn intent could not be stored` +
  (abortError === null ? "" : ` when the turn was stopped (${abortError}) nor`) +
  ` during terminal handling (${terminalError}). No automatic follow-up turn will be sent for this ` +
  "event; inspect the run with the workflow tool's status action before continuing."

/** The run's and its session's IDs, as span attributes and log annotations. */
const runAnnotations = (run: RunRef | null): Record<string, string> =>
  run === null ? {} : { runId: run.runId, sessionId: run.targetSessionId }

export const make = (
  options: InterruptionsOptions = {}
): Effect.Effect<SourceEventsService, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<TurnIntentStore | PiSession | AbortBookkeeping>()
    const session = yield* PiSession
    const persistTimeoutMs = toMillis((yield* TimingPolicy).abortPersistTimeout)
    const terminal: TerminalOptions = {
      attempts: options.terminal?.attempts ?? 4,
      retryBaseMs: options.terminal?.retryBaseMs ?? 50,
      attemptTimeoutMs: options.terminal?.attemptTimeoutMs ?? 2_000
    }
    // Abort-time persistence failures by intent ID, until terminal handling stores the intent.
    const abortFailures = yield* Ref.make<ReadonlyMap<string, string>>(new Map())

    const remember = (intentId: string, error: string) =>
      Ref.update(abortFailures, (m) => new Map(m).set(intentId, error))
    const forget = (intentId: string) =>
      Ref.modify(abortFailures, (m): [string | null, ReadonlyMap<string, string>] => {
        const next = new Map(m)
        next.delete(intentId)
        return [m.get(intentId) ?? null, next]
      })

    // A named span per event (with the run and session) and the same keys on every log line, so
    // a tracer or a log reader can follow one interruption to its successor turn.
    const publish: SourceEventsService["publish"] = Effect.fn("SourceEvents.publish")(
      function* (event) {
        const decision = decide(event)
        const request = intentRequest(event, decision)
        yield* Effect.annotateCurrentSpan({ event: event._tag, decision: decision._tag })
        // A stop that owes nothing: an interruption whose turn has its successor already (or
        // whose run the user's cancel ended), or a direct cancel the runner took mid-step, which
        // stops only a turn that still runs (the model may have ended its turn already).
        if (
          decision._tag === "AbortOnly" &&
          (event._tag === "ActiveTurnInterrupted" || event._tag === "Quiet") &&
          event.run !== null
        ) {
          const { runId } = event.run
          if (event._tag === "ActiveTurnInterrupted" || !(yield* (yield* PiSession).isIdle)) {
            const which = event._tag === "ActiveTurnInterrupted" ? event.provenance.interruption : event.kind
            yield* abortWithoutIntent(`no-intent:${runId}:${which}`).pipe(
              Effect.withSpan("Interruptions.abortWithoutIntent")
            )
            yield* Effect.logInfo(`workflow run ${runId}: turn stopped, no intent (${decision.why})`)
          }
          return NO_INTENT
        }
        if (request === null || decision._tag !== "Intent") return NO_INTENT
        if (decision.abortTurn) {
          const outcome = yield* abortActiveTurn(request, { persistTimeoutMs }).pipe(
            Effect.withSpan("Interruptions.abortActiveTurn")
          )
          if (outcome.intentId !== null) yield* Effect.annotateCurrentSpan("intentId", outcome.intentId)
          if (outcome.error !== null) {
            yield* remember(outcome.intentId ?? request.run.runId, outcome.error)
            yield* Effect.logWarning("turn intent not stored at abort time; terminal handling retries", {
              runId: request.run.runId,
              error: outcome.error
            })
          }
          return { intentId: outcome.intentId, warning: null }
        }
        const outcome = yield* persistEligible(request, terminal).pipe(
          Effect.withSpan("Interruptions.persistEligible")
        )
        if (outcome.intentId !== null) yield* Effect.annotateCurrentSpan("intentId", outcome.intentId)
        const abortError = yield* forget(outcome.intentId ?? request.run.runId)
        if (outcome.error === null) return { intentId: outcome.intentId, warning: null }
        const warning = guaranteeLostWarning(request, abortError, outcome.error)
        yield* session.notify(warning, "warning")
        return { intentId: outcome.intentId, warning }
      },
      (effect, event) =>
        Effect.zipRight(Effect.annotateCurrentSpan(runAnnotations(event.run)), effect).pipe(
          Effect.annotateLogs(runAnnotations(event.run)),
          Effect.annotateSpans(runAnnotations(event.run)),
          Effect.provide(context)
        )
    )

    return { publish }
  })

export const layer = (
  options: InterruptionsOptions = {}
): Layer.Layer<SourceEvents, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Layer.effect(SourceEvents, make(options))

// Abort ordering for an active workflow turn. The publisher records abort provenance on the run
// before publishing (bounded; the event carries it either way); then, in this order:
//
// 1. build the source event and intent IDs from that provenance;
// 2. try to persist the intent, bounded in time, so a slow or failing store cannot hold the
//    abort back by more than `TimingPolicy.abortPersistTimeout`;
// 3. record the intent in system-abort bookkeeping;
// 4. abort the turn.
//
// Steps 3 and 4 are a finalizer of steps 1–2 in an uninterruptible region: they run whatever
// steps 1–2 do (fail, die, hang past the bound, get interrupted). A failed persist is returned
// (not raised): terminal handling retries the same intent ID.

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

// Terminal handling for eligible events (terminal run state, handoff with no successor, launch
// failure, asynchronous failure after a successful start): find or create the deterministic
// intent, refresh its facts from the observed state and make it fallback-eligible. A completed
// run's intent is only stored: its presentation resolves it, and reconciliation makes it eligible
// if that never happens. Retried with a bounded schedule; the result says whether the intent is
// durable (and eligible, when the request asks for it) now.

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

// Short, bounded descriptions of failures for warnings and receipts (never whole stacks).

const MAX_DESCRIPTION = 300

const clipDescription = (text: string) =>
  text.length <= MAX_DESCRIPTION ? text : `${text.slice(0, MAX_DESCRIPTION - 1)}…`

/** One line naming the error's tag (when it has one) and its message. */
export const describeError = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : null
    const message = "message" in error && typeof error.message === "string" ? error.message : ""
    if (tag === "TimeoutException") return "timed out"
    if (tag !== null) return clipDescription(message.length > 0 ? `${tag}: ${message}` : tag)
    if (message.length > 0) return clipDescription(message)
  }
  return clipDescription(String(error))
}

/** Describe the first failure or defect of a cause. */
export const describeCause = (cause: Cause.Cause<unknown>): string => describeError(Cause.squash(cause))
