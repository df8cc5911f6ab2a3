/**
 * The OTLP exporter (loaded by otlp.ts only when traces are on): @effect/opentelemetry's
 * OtlpTracer, OTLP/JSON (or protobuf, as configured) over `fetch` (no OpenTelemetry SDK), as the
 * runtime's tracer.
 *
 * Spans go out in batches every few seconds; closing the layer's scope (session shutdown, the
 * CLI's exit) sends the rest, waiting at most `FLUSH_BOUND`, and each request is bounded, so a
 * collector that is down or stuck never holds Pi or the CLI up.
 *
 * What leaves is IDs, names, times, status codes and links. Free text stays: span events (Effect
 * records every log line as one, with its annotations and cause) are dropped, a failure is
 * exported as its error's name (no message, no stack), `code.stacktrace` (local paths) and
 * attributes that are neither string, number nor boolean are dropped, strings pass the redactor.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Cause, ConfigProvider, Duration, Effect, Exit, Layer, Tracer } from "effect"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { OtlpConfig } from "./otlp-config.ts"

export const FLUSH_BOUND = Duration.seconds(2)
const REQUEST_BOUND = Duration.seconds(10)

/** A failure as its error's name alone. */
class Failure extends Error {
  constructor(name: string) {
    super(name)
    this.name = name
    this.stack = name
  }
}

const nameOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : error instanceof Error
      ? error.name
      : "Defect"

const scrubExit = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<unknown, unknown> =>
  Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)
    ? exit
    : Exit.fail(new Failure(nameOf(Cause.squash(exit.cause))))

/** OtlpTracer's span, seen through what may leave (the module comment). */
class Scrubbed implements Tracer.Span {
  readonly _tag = "Span"
  constructor(private readonly span: Tracer.Span) {}
  get name() {
    return this.span.name
  }
  get spanId() {
    return this.span.spanId
  }
  get traceId() {
    return this.span.traceId
  }
  get parent() {
    return this.span.parent
  }
  get context() {
    return this.span.context
  }
  get status() {
    return this.span.status
  }
  get attributes() {
    return this.span.attributes
  }
  get links() {
    return this.span.links
  }
  get sampled() {
    return this.span.sampled
  }
  get kind() {
    return this.span.kind
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    this.span.end(endTime, scrubExit(exit))
  }
  attribute(key: string, value: unknown) {
    if (key === "code.stacktrace") return
    if (typeof value === "string") this.span.attribute(key, clipCodePoints(redactText(value), 256))
    else if (typeof value === "number" || typeof value === "boolean") this.span.attribute(key, value)
  }
  event() {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.span.addLinks(links)
  }
}

const scrubbing = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({ span: (...args) => new Scrubbed(tracer.span(...args)), context: tracer.context })

/** Whether a failed request's cause says nothing listens at the endpoint (its error codes, nested). */
export const refusedConnection = (cause: unknown, depth = 0): boolean => {
  if (typeof cause !== "object" || cause === null || depth > 4) return false
  if ("code" in cause && cause.code === "ECONNREFUSED") return true
  if ("errors" in cause && Array.isArray(cause.errors)) {
    if (cause.errors.some((inner) => refusedConnection(inner, depth + 1))) return true
  }
  return "cause" in cause && refusedConnection(cause.cause, depth + 1)
}

/**
 * `fetch`, each request bounded: a collector that accepts and never answers costs one timeout.
 * A refused connection is not sent again: OtlpTracer retries a transport failure three times a
 * second apart, so a collector that is down would hold every CLI exit and Pi's quit for the whole
 * flush bound. Reported as a non-transient failure, it turns the export off for a minute at once.
 */
const http = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, (client) =>
    HttpClient.transform(client, (response, request) =>
      Effect.timeoutFail(response, {
        duration: REQUEST_BOUND,
        onTimeout: () =>
          new HttpClientError.RequestError({ request, reason: "Transport", description: "timeout" })
      }).pipe(
        Effect.mapError((error) =>
          error._tag === "RequestError" && error.reason === "Transport" && refusedConnection(error.cause)
            ? new HttpClientError.RequestError({
                request,
                reason: "InvalidUrl",
                description: "connection refused"
              })
            : error
        )
      )
    )
  )
).pipe(Layer.provide(FetchHttpClient.layer))

/** The runtime's tracer, exporting to `config`'s endpoint for as long as the layer's scope lasts. */
export const layer = (config: OtlpConfig): Layer.Layer<never> =>
  Layer.unwrapScoped(
    OtlpTracer.make({
      url: config.url,
      headers: config.headers,
      resource: { serviceName: config.serviceName, attributes: config.resourceAttributes },
      shutdownTimeout: FLUSH_BOUND
    }).pipe(
      // OtlpTracer would read OTEL_RESOURCE_ATTRIBUTES itself, without percent-decoding.
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
      Effect.map((tracer) => Layer.setTracer(scrubbing(tracer)))
    )
  ).pipe(
    Layer.provide(
      Layer.merge(
        http,
        config.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson
      )
    )
  )
