/**
 * Traces over OTLP to a stand-in collector: the whole application (real SQLite store, the fake
 * Pi session) with the exporter layer the extension provides. One agent self-cancel is one trace
 * on the wire, from the tool call to the fallback's resolution, with its IDs as attributes; a
 * secret in a run's error reaches the collector nowhere. And the exporter never holds up the
 * scope's close, whatever the collector does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { toolCallTrace } from "../../src/telemetry/turn-traces.ts"
import type { ToolInput } from "../../src/app/tool.ts"
import { layerFromEnv } from "../../src/telemetry/otlp.ts"
import { FLUSH_BOUND, refusedConnection } from "../../src/telemetry/otlp-exporter.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { attribute, type Collector, receivedSpans, startCollector } from "../support/otlp-collector.ts"
import { crashing } from "../support/workflows.ts"
import { buildApp, eventually, FALLBACK, greet, SELF_CANCEL_SPANS, sentOfType, STEP } from "../app/support.ts"

const SECRET = `ghp_${"x7Qk".repeat(9)}`

const collector = (options: { readonly hang?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => startCollector(options)),
    (c) => Effect.promise(() => c.close())
  )

let calls = 0

/** A tool call as the extension makes it (Pi's call ID; the root of its turn's trace). */
const tool = (input: ToolInput) => {
  const call = { toolCallId: `call-${++calls}` }
  return runTool(input, call).pipe(toolCallTrace(input._tag, call))
}

class ForgeRefused extends Error {
  override readonly name = "ForgeRefused"
}

/**
 * What would leak if the payload were sent as built: a span that fails with the secret in its
 * error, logs it, and carries it in an attribute.
 */
const leakProbe = Effect.logWarning(`the forge said ${SECRET}`).pipe(
  Effect.zipRight(Effect.fail(new ForgeRefused(`refused ${SECRET}`))),
  Effect.withSpan("leak.probe", { attributes: { "probe.text": `token ${SECRET}` } }),
  Effect.ignore
)

/** A run that fails with `SECRET` in its error, then a greet run the agent cancels in its own turn. */
const failThenSelfCancel = Effect.gen(function* () {
  const fake = yield* PiSessionFake
  yield* leakProbe
  yield* tool({ _tag: "start", workflow: "crash" })
  yield* afterSettle(false)
  yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
  yield* fake.settle()
  yield* tool({ _tag: "start", workflow: "greet" })
  yield* afterSettle(false)
  yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
  yield* tool({ _tag: "cancel" })
  yield* fake.settle({ aborted: true })
  yield* afterSettle(false)
  yield* eventually(sentOfType(FALLBACK), (f) => f.length === 2)
})

const exported = (c: Collector, warnings: Array<string>, env: Record<string, string> = {}) =>
  buildApp([greet, crashing(`the forge refused token ${SECRET}`)]).pipe(
    Layer.provide(
      layerFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, ...env }, (line) => warnings.push(line))
    )
  )

describe("traces over OTLP", () => {
  it.live("one self-cancel is one trace at the collector, with IDs and no secret", () =>
    Effect.gen(function* () {
      const c = yield* collector()
      const warnings: Array<string> = []
      yield* failThenSelfCancel.pipe(
        Effect.provide(
          exported(c, warnings, {
            OTEL_SERVICE_NAME: "pwt-test",
            OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
            OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=k%20v"
          })
        )
      )
      // The layer's scope is closed: what was left is flushed.
      expect(warnings).toEqual([])
      const posts = c.received.filter((r) => r.path === "/v1/traces")
      expect(posts.length).toBeGreaterThan(0)
      expect(posts[0]?.headers["x-collector-key"]).toBe("k v")
      expect(posts[0]?.headers["content-type"]).toContain("application/json")
      for (const post of posts) {
        expect(post.body).not.toContain(SECRET)
        expect(post.body).not.toContain("ghp_")
        expect(post.body).toContain('"stringValue":"pwt-test"')
        expect(post.body).toContain('"stringValue":"test"')
      }
      const spans = receivedSpans(c)
      // No log line leaves as a span event; a failure leaves as its error's name only.
      expect(
        spans.flatMap((s) => s.events.map((e) => e.name)).filter((name) => name !== "exception")
      ).toEqual([])

      const probe = spans.find((s) => s.name === "leak.probe")
      expect([probe?.status.code, probe?.status.message]).toEqual([2, "ForgeRefused"]) // failed: its name only
      expect(probe?.events).toHaveLength(1) // the exception, not the log line
      expect(probe && attribute(probe, "probe.text")).toBe("token [REDACTED]")

      const cancel = spans.filter(
        (s) => s.name === "workflow.tool" && attribute(s, "workflow.action") === "cancel"
      )
      expect(cancel).toHaveLength(1)
      const root = cancel[0]
      if (root === undefined) throw new Error("no tool span")
      const runId = attribute(root, "workflow.run.id")
      expect(typeof runId).toBe("string")
      expect(attribute(root, "pi.session.id")).toBe("s1")
      expect(root.parentSpanId).toBeUndefined()
      const trace = spans.filter((s) => s.traceId === root.traceId)
      const names = new Set(trace.map((s) => s.name))
      for (const name of ["WorkflowTool.cancel", "workflow.interruption", ...SELF_CANCEL_SPANS]) {
        expect(names, name).toContain(name)
      }
      // Every span of the trace hangs under the tool call's span.
      const ids = new Set(trace.map((s) => s.spanId))
      expect(
        trace.filter((s) => s !== root && (s.parentSpanId === undefined || !ids.has(s.parentSpanId)))
      ).toEqual([])
      const interruption = trace.find((s) => s.name === "workflow.interruption")
      expect(interruption && attribute(interruption, "workflow.run.id")).toBe(runId)
      expect(interruption?.links).toHaveLength(1) // the runner's span that published it
      const send = trace.find((s) => s.name === "Coordinator.sendFallback")
      const intentId = send && attribute(send, "workflow.intent.id")
      expect(typeof intentId).toBe("string")
      expect(send && attribute(send, "runId")).toBe(runId)
      expect(send?.links).toHaveLength(1) // the settle's pass that sent it
    }).pipe(Effect.scoped)
  )

  it.live("http/protobuf is sent as protobuf, redacted like JSON", () =>
    Effect.gen(function* () {
      const c = yield* collector()
      yield* Effect.annotateCurrentSpan("probe.text", `token ${SECRET}`).pipe(
        Effect.withSpan("protobuf.probe"),
        Effect.provide(
          layerFromEnv(
            { OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" },
            () => {
              throw new Error("no warning expected")
            }
          )
        )
      )
      expect(c.received.map((post) => post.headers["content-type"])).toEqual(["application/x-protobuf"])
      const body = c.received[0]?.body ?? ""
      expect(body).toContain("protobuf.probe") // a protobuf string field is its UTF-8 bytes
      expect(body).toContain("token [REDACTED]")
      expect(body).not.toContain(SECRET)
      expect(body.trimStart().startsWith("{")).toBe(false)
    }).pipe(Effect.scoped)
  )

  it.live("a collector that never answers holds the close up by the flush bound at most", () =>
    Effect.gen(function* () {
      const c = yield* collector({ hang: true })
      const started = Date.now()
      yield* Effect.void.pipe(
        Effect.withSpan("probe"),
        Effect.provide(
          layerFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint }, () => {
            throw new Error("no warning expected")
          })
        )
      )
      const took = Date.now() - started
      expect(c.received.length).toBeGreaterThan(0) // it was asked
      expect(took).toBeLessThan(4_000)
    }).pipe(Effect.scoped)
  )

  it.live("a collector that is down costs nothing visible: the program runs, the close is prompt", () =>
    Effect.gen(function* () {
      const c = yield* collector()
      yield* Effect.promise(() => c.close())
      const started = Date.now()
      const result = yield* Effect.succeed(42).pipe(
        Effect.withSpan("probe"),
        Effect.provide(
          layerFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint }, () => {
            throw new Error("no warning expected")
          })
        )
      )
      expect(result).toBe(42)
      // Refused, not retried: the close does not wait out the flush bound (it did: 2,0xx ms).
      expect(Date.now() - started).toBeLessThan(Duration.toMillis(FLUSH_BOUND))
    }).pipe(Effect.scoped)
  )

  it("a refused connection is told by its codes, however deeply fetch nests them", () => {
    const refused = Object.assign(new Error("connect"), { code: "ECONNREFUSED" })
    expect(refusedConnection(new TypeError("fetch failed", { cause: refused }))).toBe(true)
    expect(refusedConnection({ cause: new AggregateError([new Error("v6"), refused]) })).toBe(true)
    expect(refusedConnection({ cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) })).toBe(
      false
    )
    expect(refusedConnection(new Error("ECONNREFUSED in words only"))).toBe(false)
    expect(refusedConnection(undefined)).toBe(false)
  })

  it.live("a bad setting: one warning line, no tracer, the program runs", () =>
    Effect.gen(function* () {
      const warnings: Array<string> = []
      const result = yield* Effect.succeed("ran").pipe(
        Effect.withSpan("probe"),
        Effect.provide(
          layerFromEnv(
            { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_HEADERS: "oops" },
            (line) => warnings.push(line)
          )
        )
      )
      expect(result).toBe("ran")
      expect(warnings).toEqual([
        "traces are off: OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value (percent-encoded; values are not shown)"
      ])
    })
  )
})
