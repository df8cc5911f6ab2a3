/**
 * Deliver an owed fallback without waiting for the periodic pass. Terminal, handoff and
 * launch-failure events can make an intent eligible while no turn runs (a run that fails after
 * its start result, a queued launch refused at activation after the settle's own pass): no
 * `agent_settled` follows, so the first delivery would otherwise be the periodic pass, seconds
 * later. After each such event this decorator starts one fallback pass in the background. The
 * pass itself decides: a busy session skips it and the next settle delivers.
 */
import { Effect, FiberSet, Layer } from "effect"
import { Coordinator } from "../delivery/coordinator.ts"
import { SourceEvents } from "../interruption/source-events.ts"

/** SourceEvents over the core's SourceEvents and Coordinator (both required). */
export const layer: Layer.Layer<SourceEvents, never, SourceEvents | Coordinator> = Layer.scoped(
  SourceEvents,
  Effect.gen(function* () {
    const inner = yield* SourceEvents
    const coordinator = yield* Coordinator
    const passes = yield* FiberSet.make()
    const pass = coordinator
      .syncFallbacks("periodic")
      .pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("fallback pass after an eligible event failed", cause)
        )
      )
    return SourceEvents.of({
      publish: (event) =>
        Effect.tap(inner.publish(event), (result) =>
          event._tag !== "ActiveTurnInterrupted" && event._tag !== "Quiet" && result.intentId !== null
            ? FiberSet.run(passes, pass)
            : Effect.void
        )
    })
  })
)
