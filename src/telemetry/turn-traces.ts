/**
 * One turn, one trace. The work that follows an interruption is spread over fibers and moments
 * that share no call stack: the agent's tool call, the runner fiber that stops the visit and
 * stores the intent, and, after Pi's settle, the pass that sends the successor. Each would start
 * its own trace; this in-process memory joins them:
 *
 * - while a tool call of a session's active turn runs, it is that session's trace origin: an
 *   interruption published meanwhile (it aborts that very turn) becomes its child;
 * - where an intent began is remembered by intent ID (the newest `MAX_INTENTS`, as span context
 *   only), and each later delivery step for that intent runs as a child of it, linked to the
 *   pass that runs it.
 *
 * In-process only: after a restart the delivery starts a new trace, still carrying the intent ID.
 * Its operations are tracing plumbing and open no spans of their own.
 */
import { Context, Effect, Layer, Option, Tracer } from "effect"

/** Intents whose origin is remembered; an older one's delivery just starts its own trace. */
export const MAX_INTENTS = 512

export const INTENT_ID = "workflow.intent.id"

export interface TurnTracesService {
  /** Run `effect` as a tool call of `sessionId`'s active turn, `span` being the call's span. */
  readonly toolCall: (
    sessionId: string,
    span: Tracer.AnySpan
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The span of the newest tool call `sessionId`'s active turn is making now, if any. */
  readonly origin: (sessionId: string) => Effect.Effect<Option.Option<Tracer.AnySpan>>
  /** Where an intent began; the first call for an intent wins (a later event only reuses it). */
  readonly remember: (intentId: string, span: Tracer.AnySpan) => Effect.Effect<void>
  /**
   * `effect` in a span named `name` for `intentId`: a child of where the intent began, linked
   * to the caller's span, when that is remembered; else an ordinary child of the caller.
   */
  readonly withIntentSpan: (
    name: string,
    intentId: string,
    attributes?: Record<string, unknown>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class TurnTraces extends Context.Tag("pi-workflow-turns/TurnTraces")<
  TurnTraces,
  TurnTracesService
>() {}

/** Only the span's identity: a remembered span keeps none of its attributes alive. */
const contextOf = (span: Tracer.AnySpan): Tracer.ExternalSpan =>
  Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled })

export const make = (): TurnTracesService => {
  const calls = new Map<string, Array<Tracer.AnySpan>>()
  const began = new Map<string, Tracer.ExternalSpan>()

  const leave = (sessionId: string, span: Tracer.AnySpan) =>
    Effect.sync(() => {
      const open = (calls.get(sessionId) ?? []).filter((s) => s !== span)
      if (open.length === 0) calls.delete(sessionId)
      else calls.set(sessionId, open)
    })

  return {
    toolCall: (sessionId, span) => (effect) =>
      Effect.acquireUseRelease(
        Effect.sync(() => void calls.set(sessionId, [...(calls.get(sessionId) ?? []), span])),
        () => effect,
        () => leave(sessionId, span)
      ),
    origin: (sessionId) => Effect.sync(() => Option.fromNullable(calls.get(sessionId)?.at(-1))),
    remember: (intentId, span) =>
      Effect.sync(() => {
        if (began.has(intentId)) return
        began.set(intentId, contextOf(span))
        // Maps iterate in insertion order: the first key is the oldest.
        if (began.size > MAX_INTENTS) {
          const oldest = began.keys().next()
          if (oldest.done !== true) began.delete(oldest.value)
        }
      }),
    withIntentSpan:
      (name, intentId, attributes = {}) =>
      (effect) =>
        Effect.flatMap(
          Effect.all([Effect.sync(() => began.get(intentId)), Effect.option(Effect.currentParentSpan)]),
          ([origin, caller]) =>
            Effect.withSpan(effect, name, {
              attributes: { ...attributes, [INTENT_ID]: intentId },
              ...(origin === undefined
                ? {}
                : {
                    parent: origin,
                    links: Option.match(caller, {
                      onNone: () => [],
                      onSome: (span) => [{ _tag: "SpanLink" as const, span, attributes: {} }]
                    })
                  })
            })
        )
  }
}

/** For a graph without the memory: a delivery step is an ordinary span with the intent ID. */
export const untraced: TurnTracesService = {
  toolCall: () => (effect) => effect,
  origin: () => Effect.succeedNone,
  remember: () => Effect.void,
  withIntentSpan:
    (name, intentId, attributes = {}) =>
    (effect) =>
      Effect.withSpan(effect, name, { attributes: { ...attributes, [INTENT_ID]: intentId } })
}

export const layer: Layer.Layer<TurnTraces> = Layer.sync(TurnTraces, make)
