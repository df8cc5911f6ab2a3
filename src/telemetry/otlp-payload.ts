/**
 * What of a span leaves the process: the last step before an OTLP export request, over the
 * payload OtlpTracer built (OTLP/JSON: resourceSpans → scopeSpans → spans). Spans carry IDs,
 * names, times, status codes and links; free text does not leave:
 *
 * - events are dropped: Effect records every log line of a span as an event, with its
 *   annotations and the pretty cause, and a failed span's `exception` event holds the error's
 *   message and stack, any of which can quote a run's error or a tool's output;
 * - a status keeps its code, not its message (the error's message again);
 * - `code.stacktrace` is dropped (paths of the user's machine);
 * - every other attribute is kept if it is a string, number or boolean, strings passed through
 *   the one redactor and clipped; a failed span gets `error.type`, the error's name only.
 *
 * A payload of another shape (a newer OtlpTracer) is not exported at all rather than unchecked.
 */
import { Either, Option, Schema } from "effect"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"

/** Longest exported attribute string, in code points. */
export const MAX_ATTRIBUTE_CHARS = 256
const DROPPED_KEYS = new Set(["code.stacktrace"])

const KeyValue = Schema.Struct({ key: Schema.String, value: Schema.Unknown })
type KeyValue = typeof KeyValue.Type

const Scalar = Schema.Union(
  Schema.Struct({ stringValue: Schema.String }),
  Schema.Struct({ boolValue: Schema.Boolean }),
  Schema.Struct({ intValue: Schema.Union(Schema.Number, Schema.String) }),
  Schema.Struct({ doubleValue: Schema.Number })
)
const scalar = Schema.decodeUnknownOption(Scalar)

const Event = Schema.Struct({ name: Schema.String, attributes: Schema.Array(KeyValue) })

const Span = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.String),
  name: Schema.String,
  kind: Schema.Number,
  startTimeUnixNano: Schema.String,
  endTimeUnixNano: Schema.String,
  attributes: Schema.Array(KeyValue),
  events: Schema.Array(Event),
  status: Schema.Struct({ code: Schema.Number }),
  links: Schema.Array(
    Schema.Struct({ traceId: Schema.String, spanId: Schema.String, attributes: Schema.Array(KeyValue) })
  )
})
type Span = typeof Span.Type

const Traces = Schema.Struct({
  resourceSpans: Schema.Array(
    Schema.Struct({
      resource: Schema.Unknown,
      scopeSpans: Schema.Array(Schema.Struct({ scope: Schema.Unknown, spans: Schema.Array(Span) }))
    })
  )
})
const decodeTraces = Schema.decodeUnknownEither(Traces)

const text = (value: string) => clipCodePoints(redactText(value), MAX_ATTRIBUTE_CHARS)

const cleanAttribute = (attribute: KeyValue): Option.Option<KeyValue> => {
  if (DROPPED_KEYS.has(attribute.key)) return Option.none()
  return Option.map(scalar(attribute.value), (value) => ({
    key: text(attribute.key),
    value: "stringValue" in value ? { stringValue: text(value.stringValue) } : value
  }))
}

const cleanAttributes = (attributes: ReadonlyArray<KeyValue>): Array<KeyValue> =>
  attributes.flatMap((attribute) => Option.toArray(cleanAttribute(attribute)))

/** The failed span's error name, from its `exception` event (`exception.type`), never its message. */
const errorType = (span: Span): Array<KeyValue> => {
  const type = span.events
    .find((event) => event.name === "exception")
    ?.attributes.find((attribute) => attribute.key === "exception.type")
  const name = type === undefined ? Option.none() : scalar(type.value)
  return Option.isSome(name) && "stringValue" in name.value
    ? [{ key: "error.type", value: { stringValue: text(name.value.stringValue) } }]
    : []
}

const cleanSpan = (span: Span) => {
  const kept = cleanAttributes(span.attributes)
  const attributes = [...kept, ...errorType(span)]
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: span.startTimeUnixNano,
    endTimeUnixNano: span.endTimeUnixNano,
    attributes,
    droppedAttributesCount: span.attributes.length - kept.length,
    events: [],
    droppedEventsCount: span.events.length,
    status: { code: span.status.code },
    links: span.links.map((link) => ({
      traceId: link.traceId,
      spanId: link.spanId,
      attributes: cleanAttributes(link.attributes),
      droppedAttributesCount: 0
    })),
    droppedLinksCount: 0
  }
}

/** The payload to send for `data` (OtlpTracer's), or an empty one when it has another shape. */
export const exportedTraces = (data: unknown) =>
  Either.match(decodeTraces(data), {
    onLeft: () => ({ resourceSpans: [] }),
    onRight: (traces) => ({
      resourceSpans: traces.resourceSpans.map((resource) => ({
        resource: resource.resource,
        scopeSpans: resource.scopeSpans.map((scope) => ({
          scope: scope.scope,
          spans: scope.spans.map(cleanSpan)
        }))
      }))
    })
  })
