/**
 * The live `SourceEvents`: every published event goes through the event policy. Active-turn
 * interruptions run the abort ordering; terminal, handoff and launch-failure events make the
 * deterministic intent eligible; quiet events do nothing. `publish` never fails.
 *
 * When the intent could not be stored at abort time and terminal handling cannot store it
 * either, the user is warned and the warning is returned so the engine records it on the run.
 */
import { Effect, Layer, Ref } from "effect"
import { decide } from "../domain/event-policy.ts"
import { type IntentRequest, intentRequest } from "../domain/intent-request.ts"
import type { RunRef } from "../domain/source-event.ts"
import { TimingPolicy, toMillis } from "../domain/timing-policy.ts"
import { PiSession } from "../session/pi-session.ts"
import type { TurnIntentStore } from "../store/turn-intent-store.ts"
import type { AbortBookkeeping } from "./abort-bookkeeping.ts"
import { abortActiveTurn, abortWithoutIntent } from "./abort-ordering.ts"
import { SourceEvents, type SourceEventsService } from "./source-events.ts"
import { persistEligible, type TerminalOptions } from "./terminal-handling.ts"

export interface InterruptionsOptions {
  /** Longest the abort waits for the intent to be stored (default 250 ms). */
  readonly persistTimeoutMs?: number
  /** Terminal handling retry policy (defaults: 4 attempts, 50 ms doubling, 2 s per attempt). */
  readonly terminal?: Partial<TerminalOptions>
}

export const DEFAULT_PERSIST_TIMEOUT_MS = 250

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
    const persistTimeoutMs = options.persistTimeoutMs ?? toMillis((yield* TimingPolicy).abortPersistTimeout)
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
        if (decision._tag === "AbortOnly" && event._tag === "ActiveTurnInterrupted") {
          const { runId } = event.run
          yield* abortWithoutIntent(`no-intent:${runId}:${event.provenance.interruption}`).pipe(
            Effect.withSpan("Interruptions.abortWithoutIntent")
          )
          yield* Effect.logInfo(`workflow run ${runId}: turn stopped, no intent (${decision.why})`)
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
