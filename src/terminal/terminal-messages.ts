/**
 * The terminal decision inside the messages that end a run's story: the presentation of a
 * completed run (natural delivery) and the fallback for a run that ended otherwise. Both get
 * the same decision block and the same small card fields in `details`
 * (`workflowName, observedState, runId, reasonKind, restartCount, restartLimit`). The block is
 * built from the stored run and its launch data, which never change once the run has ended, so
 * a retried delivery composes the very same message. Reading them can fail; then the message
 * goes out without the block rather than not at all.
 */
import { Effect, Layer, Option } from "effect"
import { Coordinator, type CoordinatorService } from "../delivery/coordinator.ts"
import { FallbackComposer } from "../delivery/coordinator.ts"
import { fallbackMessage } from "../delivery/fallback.ts"
import { PRESENTATION_TYPE } from "../domain/message-types.ts"
import type { CustomMessage } from "../session/pi-session.ts"
import { RunStore } from "../store/run-store.ts"
import { LaunchStore } from "./launch-store.ts"
import { type TerminalDecision, terminalDecision } from "./terminal-decision.ts"

/** The decision for a run that has ended, or none (still active, unknown, or unreadable). */
export const decisionFor = (runId: string) =>
  Effect.gen(function* () {
    const run = yield* (yield* RunStore).get(runId)
    if (Option.isNone(run)) return Option.none<TerminalDecision>()
    const launch = yield* (yield* LaunchStore).get(runId)
    const lineage = Option.match(launch, { onNone: () => null, onSome: (found) => found.launch.lineage })
    return Option.fromNullable(terminalDecision(run.value, lineage))
  }).pipe(
    Effect.catchAll((error) =>
      Effect.as(
        Effect.logWarning(`terminal decision for run ${runId} unavailable: ${error.message}`),
        Option.none<TerminalDecision>()
      )
    )
  )

/** The message with the decision block appended and the card fields in its details. */
export const withDecision = (message: CustomMessage, decision: TerminalDecision): CustomMessage => ({
  ...message,
  content: `${message.content}\n\n---\n${decision.text}`,
  details: { ...message.details, ...decision.card }
})

/** Fallbacks of ended runs carry the decision; other fallbacks stay the factual notice. */
export const layerComposer: Layer.Layer<FallbackComposer, never, RunStore | LaunchStore> = Layer.effect(
  FallbackComposer,
  Effect.gen(function* () {
    const context = yield* Effect.context<RunStore | LaunchStore>()
    return FallbackComposer.of({
      compose: (intent) =>
        Effect.map(decisionFor(intent.runId), (decision) =>
          Option.match(decision, {
            onNone: () => fallbackMessage(intent),
            onSome: (found) => withDecision(fallbackMessage(intent), found)
          })
        ).pipe(Effect.provide(context))
    })
  })
)

/** The Coordinator the engine uses: presentations of ended runs carry the decision. */
export const layerCoordinator: Layer.Layer<Coordinator, never, Coordinator | RunStore | LaunchStore> =
  Layer.effect(
    Coordinator,
    Effect.gen(function* () {
      const inner = yield* Coordinator
      const context = yield* Effect.context<RunStore | LaunchStore>()
      const deliverNatural: CoordinatorService["deliverNatural"] = (natural) =>
        natural.kind !== "presentation" || natural.message.customType !== PRESENTATION_TYPE
          ? inner.deliverNatural(natural)
          : Effect.flatMap(Effect.provide(decisionFor(natural.runId), context), (decision) =>
              inner.deliverNatural(
                Option.match(decision, {
                  onNone: () => natural,
                  onSome: (found) => ({ ...natural, message: withDecision(natural.message, found) })
                })
              )
            )
      return Coordinator.of({ ...inner, deliverNatural })
    })
  )
