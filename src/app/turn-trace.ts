/**
 * A turn's trace: the agent's `workflow` tool call, the abort it causes, the intent's life and
 * the successor message as one trace (src/telemetry/turn-traces.ts keeps the memory that joins
 * them). Two pieces of the application put the work there:
 *
 * - `toolCallTrace`: the root span of one tool call (`workflow.tool`), the trace origin of its
 *   session while it runs;
 * - `layerTurnTrace`: a SourceEvents decorator. An event published while a tool call of the
 *   run's session runs (the runner stopping the visit the call's `cancel` asked to stop) joins
 *   that call's trace in a `workflow.interruption` span, linked to the runner's span that
 *   published it; the intent the event creates is remembered with its span, so the delivery
 *   steps for it (coordinator, fallback, resolution) continue the same trace.
 *
 * Attributes are IDs and the action's name only: no prompt, no output, no error text.
 */
import { Effect, Layer, Option, type Tracer } from "effect"
import type { SourceEvent } from "../domain/event-policy.ts"
import { SourceEvents } from "../interruption/source-events.ts"
import { PiSession } from "../session/pi-session.ts"
import { TurnTraces } from "../telemetry/turn-traces.ts"
import type { Reply } from "./replies.ts"

export const SESSION_ID = "pi.session.id"
export const RUN_ID = "workflow.run.id"
export const ACTION = "workflow.action"

const runIdOf = (details: Reply["details"]): string | null =>
  typeof details.runId === "string" ? details.runId : null

/**
 * `effect` (one tool action) as the root of its own trace, named `workflow.tool` with the
 * action, the session and, once the reply names it, the run.
 */
export const toolCallTrace =
  (action: string, call: { readonly toolCallId?: string } = {}) =>
  <E, R>(effect: Effect.Effect<Reply, E, R>): Effect.Effect<Reply, E, R | PiSession | TurnTraces> =>
    Effect.gen(function* () {
      const sessionId = yield* (yield* PiSession).sessionId
      const traces = yield* TurnTraces
      const span = yield* Effect.currentSpan.pipe(Effect.orDie)
      span.attribute(SESSION_ID, sessionId)
      const reply = yield* traces.toolCall(sessionId, span)(effect)
      const runId = runIdOf(reply.details)
      if (runId !== null) span.attribute(RUN_ID, runId)
      return reply
    }).pipe(
      Effect.withSpan("workflow.tool", {
        root: true,
        attributes: {
          [ACTION]: action,
          ...(call.toolCallId === undefined ? {} : { "pi.tool_call.id": call.toolCallId })
        }
      })
    )

const publishIn = <A>(
  publish: Effect.Effect<A>,
  event: SourceEvent,
  origin: Tracer.AnySpan,
  caller: Option.Option<Tracer.AnySpan>
) =>
  Effect.flatMap(Effect.currentSpan.pipe(Effect.orDie), (span) =>
    Effect.map(publish, (result) => ({ result, span }))
  ).pipe(
    Effect.withSpan("workflow.interruption", {
      parent: origin,
      links: Option.match(caller, {
        onNone: () => [],
        onSome: (span) => [{ _tag: "SpanLink" as const, span, attributes: {} }]
      }),
      attributes: {
        "workflow.event": event._tag,
        ...(event.run === null ? {} : { [RUN_ID]: event.run.runId, [SESSION_ID]: event.run.targetSessionId })
      }
    })
  )

/** The decorator (see the module comment); over any SourceEvents, with the TurnTraces memory. */
export const layerTurnTrace: Layer.Layer<SourceEvents, never, SourceEvents | TurnTraces> = Layer.effect(
  SourceEvents,
  Effect.gen(function* () {
    const inner = yield* SourceEvents
    const traces = yield* TurnTraces
    return SourceEvents.of({
      publish: (event) =>
        Effect.gen(function* () {
          const caller = yield* Effect.option(Effect.currentParentSpan)
          const origin = event.run === null ? Option.none() : yield* traces.origin(event.run.targetSessionId)
          if (Option.isNone(origin)) {
            // No tool call of that session runs: the intent begins in the publisher's trace.
            const result = yield* inner.publish(event)
            if (result.intentId !== null && Option.isSome(caller)) {
              yield* traces.remember(result.intentId, caller.value)
            }
            return result
          }
          const { result, span } = yield* publishIn(inner.publish(event), event, origin.value, caller)
          if (result.intentId !== null) yield* traces.remember(result.intentId, span)
          return result
        })
    })
  })
)
