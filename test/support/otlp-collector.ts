/**
 * A stand-in OTLP/HTTP collector for tests: a node:http server on 127.0.0.1 that keeps every
 * POST /v1/traces (raw body, headers) and answers 200. The bodies decode with `TracesBody`,
 * this test kit's own schema of OTLP/JSON (independent of the exporter's payload code).
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import { Schema } from "effect"

const AnyValue = Schema.Struct({
  stringValue: Schema.optional(Schema.String),
  boolValue: Schema.optional(Schema.Boolean),
  intValue: Schema.optional(Schema.Union(Schema.Number, Schema.String)),
  doubleValue: Schema.optional(Schema.Number)
})
const Attributes = Schema.Array(Schema.Struct({ key: Schema.String, value: AnyValue }))

export const OtlpSpan = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.String),
  name: Schema.String,
  attributes: Attributes,
  events: Schema.Array(Schema.Struct({ name: Schema.String })),
  status: Schema.Struct({ code: Schema.Number, message: Schema.optional(Schema.String) }),
  links: Schema.Array(Schema.Struct({ traceId: Schema.String, spanId: Schema.String }))
})
export type OtlpSpan = typeof OtlpSpan.Type

export const TracesBody = Schema.Struct({
  resourceSpans: Schema.Array(
    Schema.Struct({
      resource: Schema.Struct({ attributes: Attributes }),
      scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(OtlpSpan) }))
    })
  )
})
export type TracesBody = typeof TracesBody.Type

export interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export interface Collector {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly endpoint: string
  readonly received: ReadonlyArray<Received>
  readonly close: () => Promise<void>
}

/** `hang`: accept requests and never answer (a collector that is up but stuck). */
export const startCollector = async (options: { readonly hang?: boolean } = {}): Promise<Collector> => {
  const received: Array<Received> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8")
      })
      if (options.hang === true) return
      response.writeHead(request.method === "POST" && request.url === "/v1/traces" ? 200 : 404, {
        "content-type": "application/json"
      })
      response.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the collector has no TCP port")
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Every span of every received trace body, decoded (a body of another shape throws). */
export const receivedSpans = (collector: Collector): Array<OtlpSpan> =>
  collector.received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => Schema.decodeUnknownSync(TracesBody)(JSON.parse(r.body)).resourceSpans)
    .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))

/** One attribute of a span as a plain value (the string, number or boolean it holds). */
export const attribute = (span: OtlpSpan, key: string): string | number | boolean | undefined => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value?.stringValue ?? value?.intValue ?? value?.doubleValue ?? value?.boolValue
}
