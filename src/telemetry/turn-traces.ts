/**
 * One turn, one trace. The tool call, the runner fiber that stops the visit and stores the
 * intent, and the pass that sends the successor after Pi's settle share no call stack, so each
 * would start its own trace. This in-process memory joins them:
 *
 * - `toolCallTrace`: a tool call (`workflow.tool`) is its session's trace origin while it runs;
 * - `layerTurnTrace` (a SourceEvents decorator): an event published meanwhile (it stops that
 *   very turn) joins the call's trace as `workflow.interruption`, linked to the publishing span;
 * - the span where an intent began is remembered (the newest `MAX_INTENTS`, IDs only) and each
 *   delivery step for it (`withIntentSpan`) runs as its child, linked to the pass running it.
 *
 * After a restart the delivery starts a new trace, with the intent ID. Attributes are IDs only.
 * The plumbing opens no spans of its own.
 */
import { Context, Effect, Layer, Option, Tracer } from "effect"
import { SourceEvents } from "../interruption/source-events.ts"
import { PiSession } from "../session/pi-session.ts"

export const MAX_INTENTS = 512

export interface TurnTracesService {
  readonly toolCall: (
    sessionId: string,
    span: Tracer.AnySpan
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The newest tool call `sessionId` is making now. */
  readonly origin: (sessionId: string) => Effect.Effect<Option.Option<Tracer.AnySpan>>
  /** The first span remembered for an intent stays (a later event only reuses the intent). */
  readonly remember: (intentId: string, span: Tracer.AnySpan) => Effect.Effect<void>
  readonly withIntentSpan: (
    name: string,
    intentId: string,
    attributes: Record<string, unknown>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class TurnTraces extends Context.Tag("pi-workflow-turns/TurnTraces")<
  TurnTraces,
  TurnTracesService
>() {}

const linkTo = (span: Option.Option<Tracer.AnySpan>): Array<Tracer.SpanLink> =>
  Option.toArray(Option.map(span, (s) => ({ _tag: "SpanLink", span: s, attributes: {} })))

const caller = Effect.option(Effect.currentParentSpan)

/** In the intent's trace when its origin is known (linked to the caller), else the caller's. */
const intentSpan =
  (name: string, intentId: string, attributes: Record<string, unknown>, origin?: Tracer.AnySpan) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.flatMap(caller, (from) =>
      Effect.withSpan(effect, name, {
        attributes: { ...attributes, "workflow.intent.id": intentId },
        ...(origin === undefined ? {} : { parent: origin, links: linkTo(from) })
      })
    )

export const make = (): TurnTracesService => {
  const calls = new Map<string, ReadonlyArray<Tracer.AnySpan>>()
  const began = new Map<string, Tracer.ExternalSpan>()
  const open = (
    sessionId: string,
    f: (spans: ReadonlyArray<Tracer.AnySpan>) => ReadonlyArray<Tracer.AnySpan>
  ) =>
    Effect.sync(() => {
      const next = f(calls.get(sessionId) ?? [])
      if (next.length === 0) calls.delete(sessionId)
      else calls.set(sessionId, next)
    })
  return {
    toolCall: (sessionId, span) => (effect) =>
      Effect.acquireUseRelease(
        open(sessionId, (spans) => [...spans, span]),
        () => effect,
        () => open(sessionId, (spans) => spans.filter((s) => s !== span))
      ),
    origin: (sessionId) => Effect.sync(() => Option.fromNullable(calls.get(sessionId)?.at(-1))),
    remember: (intentId, { traceId, spanId, sampled }) =>
      Effect.sync(() => {
        if (began.has(intentId)) return
        // Only the identity: a remembered span keeps no attributes alive. Oldest key first.
        began.set(intentId, Tracer.externalSpan({ traceId, spanId, sampled }))
        for (const oldest of began.keys()) {
          if (began.size <= MAX_INTENTS) break
          began.delete(oldest)
        }
      }),
    withIntentSpan: (name, intentId, attributes) => (effect) =>
      Effect.suspend(() => intentSpan(name, intentId, attributes, began.get(intentId))(effect))
  }
}

/** A graph without the memory: a delivery step is an ordinary span with the intent ID. */
export const untraced: TurnTracesService = {
  toolCall: () => (effect) => effect,
  origin: () => Effect.succeedNone,
  remember: () => Effect.void,
  withIntentSpan: intentSpan
}

export const layer: Layer.Layer<TurnTraces> = Layer.sync(TurnTraces, make)

/** One tool action as the root of its trace, with the action, the session and the reply's run. */
export const toolCallTrace =
  (action: string, call: { readonly toolCallId?: string } = {}) =>
  <A extends { readonly details: Readonly<Record<string, unknown>> }, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R | PiSession | TurnTraces> =>
    Effect.gen(function* () {
      const sessionId = yield* (yield* PiSession).sessionId
      const span = yield* Effect.orDie(Effect.currentSpan)
      span.attribute("pi.session.id", sessionId)
      const reply = yield* (yield* TurnTraces).toolCall(sessionId, span)(effect)
      if (typeof reply.details.runId === "string") span.attribute("workflow.run.id", reply.details.runId)
      return reply
    }).pipe(
      Effect.withSpan("workflow.tool", {
        root: true,
        attributes: {
          "workflow.action": action,
          ...(call.toolCallId ? { "pi.tool_call.id": call.toolCallId } : {})
        }
      })
    )

/** The SourceEvents decorator of the module comment. */
export const layerTurnTrace: Layer.Layer<SourceEvents, never, SourceEvents | TurnTraces> = Layer.effect(
  SourceEvents,
  Effect.gen(function* () {
    const inner = yield* SourceEvents
    const traces = yield* TurnTraces
    return SourceEvents.of({
      publish: (event) =>
        Effect.gen(function* () {
          const from = yield* caller
          const origin = event.run ? yield* traces.origin(event.run.targetSessionId) : Option.none()
          if (Option.isNone(origin)) {
            const result = yield* inner.publish(event)
            if (result.intentId !== null && Option.isSome(from))
              yield* traces.remember(result.intentId, from.value)
            return result
          }
          return yield* Effect.flatMap(Effect.orDie(Effect.currentSpan), (span) =>
            Effect.tap(inner.publish(event), (result) =>
              result.intentId === null ? Effect.void : traces.remember(result.intentId, span)
            )
          ).pipe(
            Effect.withSpan("workflow.interruption", {
              parent: origin.value,
              links: linkTo(from),
              attributes: {
                "workflow.event": event._tag,
                ...(event.run
                  ? { "workflow.run.id": event.run.runId, "pi.session.id": event.run.targetSessionId }
                  : {})
              }
            })
          )
        })
    })
  })
)
