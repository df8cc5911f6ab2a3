/**
 * What traces over OTLP cost a session: the session application's start (the whole layer over
 * a fresh SQLite file and the fake Pi session, ready to serve) and its close, with the OTLP
 * variables unset and set to a stand-in collector on 127.0.0.1, alternating in the same run.
 * One agent self-cancel runs in between, so the close has spans to flush.
 */
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import * as App from "../src/app/layers.ts"
import { afterSettle } from "../src/app/session-hooks.ts"
import { runTool } from "../src/app/tool.ts"
import { DEFAULT_TIMING_POLICY, TimingPolicy } from "../src/domain/timing-policy.ts"
import { layerFake, PiSessionFake } from "../src/session/pi-session-fake.ts"
import { layerFromEnv } from "../src/telemetry/otlp.ts"
import { toolCallTrace } from "../src/telemetry/turn-traces.ts"
import { receivedSpans, startCollector } from "../test/support/otlp-collector.ts"
import { type BenchSection, type Check, checkList, median, ratio, ROOT, table } from "./section.ts"

/** Goal: traces on add at most this to the session application's start (once per session), ms. */
const START_COST_GOAL_MS = 5

const selfCancel = {
  name: "self-cancel",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "cancel this workflow", timeoutMs: null } },
  edges: []
}

const until = (check: Effect.Effect<boolean, never, PiSessionFake>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 3_000 && !(yield* check); i++) yield* Effect.sleep("1 millis")
  })

const sentCount = Effect.map(
  Effect.flatMap(PiSessionFake, (fake) => fake.sent),
  (sent) => sent.length
)

/** Start, one self-cancel to its fallback, close; the start and the close in ms. */
const round = async (filename: string, env: Record<string, string>) => {
  const layer = App.layer({ database: { filename }, workflows: [selfCancel] }).pipe(
    Layer.provide(Layer.succeed(TimingPolicy, { ...DEFAULT_TIMING_POLICY, syncInterval: null })),
    Layer.provideMerge(layerFake({ sessionId: "s1" })),
    Layer.provide(layerFromEnv(env, (line) => process.stderr.write(`  telemetry: ${line}\n`))),
    Layer.provide(Logger.minimumLogLevel(LogLevel.None)),
    Layer.orDie
  )
  const started = performance.now()
  const runtime = ManagedRuntime.make(layer)
  await runtime.runPromise(Effect.void)
  const ready = performance.now()
  await runtime.runPromise(
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runTool({ _tag: "start", workflow: "self-cancel" }).pipe(toolCallTrace("start"))
      yield* afterSettle(false)
      yield* until(Effect.map(sentCount, (n) => n >= 1))
      yield* runTool({ _tag: "cancel" }).pipe(toolCallTrace("cancel"))
      yield* fake.settle({ aborted: true })
      yield* afterSettle(false)
      yield* until(Effect.map(sentCount, (n) => n >= 2))
    })
  )
  const closing = performance.now()
  await runtime.dispose()
  return { start: ready - started, close: performance.now() - closing }
}

/**
 * What loading the exporter's modules (OtlpTracer, the fetch HTTP client) costs when traces are
 * on, in a fresh process after Effect, unbundled (many files: an upper bound for its chunk), ms.
 */
const moduleCost = (): number => {
  const script = [
    'await import("effect")',
    "const t = performance.now()",
    'await import("@effect/opentelemetry/OtlpTracer")',
    'await import("@effect/opentelemetry/OtlpSerialization")',
    'await import("@effect/platform/FetchHttpClient")',
    "process.stdout.write(String(performance.now() - t))"
  ].join(";")
  return Number(
    execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8" })
  )
}

export const telemetrySection: BenchSection = {
  id: "telemetry",
  title: "Traces over OTLP: session start and close, off and on",
  run: async (context) => {
    const rounds = context.quick ? 4 : 30
    const collector = await startCollector()
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }
    const samples: Record<"off" | "on", { start: Array<number>; close: Array<number> }> = {
      off: { start: [], close: [] },
      on: { start: [], close: [] }
    }
    try {
      context.log(`  telemetry: ${rounds} rounds each, off and on alternating`)
      // One warm-up round of each: module evaluation and JIT are not what is measured.
      await round(join(context.tempRoot, "telemetry-warm-off.db"), {})
      await round(join(context.tempRoot, "telemetry-warm-on.db"), on)
      for (let i = 0; i < rounds; i++) {
        for (const mode of i % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
          const r = await round(join(context.tempRoot, `telemetry-${mode}-${i}.db`), mode === "on" ? on : {})
          samples[mode].start.push(r.start)
          samples[mode].close.push(r.close)
        }
      }
    } finally {
      await collector.close()
    }
    const modules = median(Array.from({ length: context.quick ? 3 : 9 }, moduleCost))
    const spans = receivedSpans(collector).length
    const startRatio = median(samples.on.start) / median(samples.off.start)
    const ms = (values: ReadonlyArray<number>) => `${median(values).toFixed(1)} ms`
    const goals: ReadonlyArray<Check> = [
      {
        name: `traces on: the session application's start takes at most ${START_COST_GOAL_MS} ms longer than off (medians)`,
        ok: median(samples.on.start) - median(samples.off.start) <= START_COST_GOAL_MS,
        detail: `${(median(samples.on.start) - median(samples.off.start)).toFixed(1)} ms more: ${ratio(startRatio)} (${ms(samples.on.start)} on, ${ms(samples.off.start)} off)`
      }
    ]
    const checks: ReadonlyArray<Check> = [
      {
        name: "traces on: the collector received the rounds' spans",
        ok: spans > 0,
        detail: `${spans} spans over ${rounds + 1} rounds`
      }
    ]
    const markdown = [
      "The session application (the whole layer over a fresh SQLite file and the fake Pi session) is started, " +
        "runs one agent self-cancel to its fallback and is closed, with the OTLP variables unset (off) and with " +
        "`OTEL_EXPORTER_OTLP_ENDPOINT` set to a stand-in collector on 127.0.0.1 (on), alternating, " +
        `${rounds} rounds each after one warm-up round each; medians. The close with traces on includes the ` +
        "final export of the round's spans.",
      "",
      table(
        ["", "start", "close"],
        [
          ["off", ms(samples.off.start), ms(samples.off.close)],
          ["on", ms(samples.on.start), ms(samples.on.close)],
          ["on / off", ratio(startRatio), ratio(median(samples.on.close) / median(samples.off.close))]
        ]
      ),
      "",
      "Off never loads the exporter's modules (OtlpTracer, OtlpSerialization, FetchHttpClient: a chunk of their " +
        "own, imported only when traces are on); what loading them costs, in a fresh process after Effect " +
        `(unbundled: an upper bound): ${modules.toFixed(1)} ms, median of ${context.quick ? 3 : 9} processes.`,
      "",
      checkList([...goals, ...checks])
    ].join("\n")
    return { markdown, checks, goals }
  }
}
