/**
 * The tracer layer chosen from the environment: off never loads the exporter's module and leaves
 * the program's tracer alone; an exporter that cannot start leaves traces off with one warning
 * instead of failing the program.
 */
import { Effect, Layer } from "effect"
import { describe, expect, it, vi } from "vitest"

const loaded = vi.hoisted(() => ({ count: 0 }))

vi.mock("../../src/telemetry/otlp-exporter.ts", () => {
  loaded.count++
  return { layer: () => Layer.die("the exporter cannot start") }
})

const { layerFromEnv } = await import("../../src/telemetry/otlp.ts")

const tracerIn = (env: Record<string, string>, warnings: Array<string>) =>
  Effect.runPromise(Effect.tracer.pipe(Effect.provide(layerFromEnv(env, (line) => warnings.push(line)))))

describe("the tracer layer", () => {
  it("off (unset, disabled, or a bad value): the exporter is never loaded, the tracer is the program's", async () => {
    const native = await Effect.runPromise(Effect.tracer)
    const warnings: Array<string> = []
    expect(await tracerIn({}, warnings)).toBe(native)
    const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_SDK_DISABLED: "true" }
    expect(await tracerIn(disabled, warnings)).toBe(native)
    expect(await tracerIn({ OTEL_EXPORTER_OTLP_ENDPOINT: "nope" }, warnings)).toBe(native)
    expect(loaded.count).toBe(0)
    expect(warnings).toEqual(["traces are off: OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL"])
  })

  it("on: loaded on first use; one that cannot start warns once, the program runs", async () => {
    const native = await Effect.runPromise(Effect.tracer)
    const warnings: Array<string> = []
    expect(await tracerIn({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }, warnings)).toBe(native)
    expect(loaded.count).toBe(1)
    expect(warnings).toEqual(["traces are off: the OTLP exporter could not start"])
  })
})
