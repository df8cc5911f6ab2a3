/** A tracer for tests: keeps every span it starts (name, ids, parent, attributes, links) and otherwise is the native one. */
import { Effect, Option, Tracer } from "effect"

export interface RecordedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentId: string | null
  readonly attributes: ReadonlyMap<string, unknown>
  /** The span IDs it links to (links given at its start). */
  readonly links: ReadonlyArray<string>
}

export const recordingTracer = (native: Tracer.Tracer, spans: Array<RecordedSpan>): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const span = native.span(name, parent, context, links, startTime, kind)
      const parentId = Option.match(parent, { onNone: () => null, onSome: (p) => p.spanId })
      spans.push({
        name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentId,
        attributes: span.attributes,
        links: links.map((link) => link.span.spanId)
      })
      return span
    },
    context: native.context
  })

/** `effect` with every span it starts recorded into `spans`. */
export const recordingSpans =
  (spans: Array<RecordedSpan>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Effect.tracer, (native) => Effect.withTracer(effect, recordingTracer(native, spans)))
