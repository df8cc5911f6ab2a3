/**
 * Traces out over OTLP when the environment asks for it (otlp-config.ts reads the standard
 * variables), as one layer for the extension's session runtime and the CLI to provide below
 * everything else: its tracer is then every span's, and closing its scope flushes them.
 *
 * Off is free: without an endpoint the layer is empty and the exporter's module (OtlpTracer,
 * the HTTP client) is never imported; it is loaded on first use only when traces are on. A
 * setting that cannot work, or an exporter that cannot load, gives one warning line and no
 * traces, never a failure of the program that provides the layer.
 */
import { Effect, Either, Layer, Option } from "effect"
import { type OtlpConfig, type OtlpEnv, otlpConfig } from "./otlp-config.ts"
import * as Exporter from "./otlp-exporter.ts"

/** The exporter's layer; one that cannot start leaves traces off. */
const exporter = (config: OtlpConfig, warn: (line: string) => void): Layer.Layer<never> =>
  Exporter.layer(config).pipe(
    Layer.catchAllCause(() =>
      Layer.effectDiscard(Effect.sync(() => warn("traces are off: the OTLP exporter could not start")))
    )
  )

/**
 * The tracer layer `env` asks for: empty when traces are off (then `warn` gets the one line
 * saying why, if a setting was wrong), the OTLP exporter when they are on.
 */
export const layerFromEnv = (env: OtlpEnv, warn: (line: string) => void): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.sync(() =>
      Either.match(otlpConfig(env), {
        onLeft: (warning) => {
          warn(warning)
          return Layer.empty
        },
        onRight: Option.match({
          onNone: () => Layer.empty,
          onSome: (config) => exporter(config, warn)
        })
      })
    )
  )
