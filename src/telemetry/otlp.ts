/**
 * Traces out over OTLP when the environment asks (otlp-config.ts): one layer that the extension's
 * session runtime and the CLI provide below everything else, so its tracer is every span's and
 * closing its scope flushes them. Off is free: the layer is empty and the exporter's module
 * (otlp-exporter.ts: OtlpTracer, the HTTP client; ~7 ms to evaluate) is never imported. A bad
 * setting, or an exporter that cannot load or start, gives one warning and no traces.
 */
import { Effect, Either, Layer, Option } from "effect"
import { type OtlpConfig, type OtlpEnv, otlpConfig } from "./otlp-config.ts"

const exporter = (config: OtlpConfig, warn: (line: string) => void): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("./otlp-exporter.ts")),
      (m) => m.layer(config)
    )
  ).pipe(
    Layer.catchAllCause(() =>
      Layer.effectDiscard(Effect.sync(() => warn("traces are off: the OTLP exporter could not start")))
    )
  )

/** The tracer layer `env` asks for; `warn` gets the one line saying why a setting turned it off. */
export const layerFromEnv = (env: OtlpEnv, warn: (line: string) => void): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.sync(() =>
      Either.match(otlpConfig(env), {
        onLeft: (warning) => {
          warn(warning)
          return Layer.empty
        },
        onRight: Option.match({ onNone: () => Layer.empty, onSome: (config) => exporter(config, warn) })
      })
    )
  )
