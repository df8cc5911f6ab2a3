/**
 * The OTLP trace exporter: @effect/opentelemetry's OtlpTracer as the runtime's tracer, posting
 * OTLP/JSON over `fetch` (FetchHttpClient; no OpenTelemetry SDK). Loaded only when the
 * environment asks for it (otlp.ts imports this module dynamically), so a session or a CLI call
 * without an endpoint never evaluates it.
 *
 * Spans are batched and posted every few seconds; closing the layer's scope (session shutdown,
 * the CLI's exit) posts what is left, waiting at most `FLUSH_BOUND`, so a collector that is down
 * or hangs never holds up Pi's exit or the CLI. Each request is bounded by the configured
 * timeout. What the payload holds is otlp-payload.ts's decision.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { ConfigProvider, Duration, Effect, Layer } from "effect"
import type { OtlpConfig } from "./otlp-config.ts"
import { exportedTraces } from "./otlp-payload.ts"

/** Longest the final export may take when the scope closes. */
export const FLUSH_BOUND = Duration.seconds(2)

/** Every trace payload passes `exportedTraces`; this package sends no metrics and no logs. */
const serialization = Layer.succeed(
  OtlpSerialization.OtlpSerialization,
  OtlpSerialization.OtlpSerialization.of({
    traces: (data) => HttpBody.unsafeJson(exportedTraces(data)),
    metrics: () => HttpBody.empty,
    logs: () => HttpBody.empty
  })
)

/** `fetch`, each request bounded: a collector that accepts and never answers costs one timeout. */
const httpClient = (timeoutMs: number) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.transform(client, (response, request) =>
        Effect.timeoutFail(response, {
          duration: Duration.millis(timeoutMs),
          onTimeout: () =>
            new HttpClientError.RequestError({ request, reason: "Transport", description: "timed out" })
        })
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
      // OtlpTracer would read OTEL_RESOURCE_ATTRIBUTES itself (without percent-decoding): the
      // parsed config is the one source.
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
      Effect.map(Layer.setTracer)
    )
  ).pipe(Layer.provide(Layer.merge(httpClient(config.timeoutMs), serialization)))
