/**
 * The durable debts of a session, paid at session start and on a periodic pass: ended runs owe
 * their terminal turn intents (`reconcileDebts`; a completed run's intent whose presentation
 * never arrived becomes eligible, so its fallback follows), and runs of a dead owner are taken
 * over (`Engine.recover`). When an intent became eligible, a fallback pass follows.
 */
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { Coordinator } from "../delivery/coordinator.ts"
import { Engine } from "../engine/engine.ts"
import { TimingPolicy } from "../domain/timing-policy.ts"
import { PRESENTATION_TYPE } from "../domain/message-types.ts"
import { reconcileDebts } from "../interruption/reconcile.ts"
import { PiSession } from "../session/pi-session.ts"
import type { RunStore } from "../store/run-store.ts"
import type { TurnIntentStore } from "../store/turn-intent-store.ts"

const PresentationDetails = Schema.Struct({ runId: Schema.String })
const decodeDetails = Schema.decodeUnknownOption(PresentationDetails)

/**
 * Runs whose presentation the current branch shows: a completed run presented before completed
 * runs owned an intent owes none.
 */
const presentedInBranch = Effect.map(
  Effect.flatMap(PiSession, (session) => session.branch),
  (branch) => {
    const runs = new Set<string>()
    for (const entry of branch) {
      if (entry.customType !== PRESENTATION_TYPE) continue
      const details = decodeDetails(entry.details)
      if (Option.isSome(details)) runs.add(details.value.runId)
    }
    return runs
  }
)

/** One reconciliation pass for the current session. */
export const reconcileSession = Effect.gen(function* () {
  const session = yield* PiSession
  const sessionId = yield* session.sessionId
  const debts = yield* reconcileDebts(sessionId, yield* presentedInBranch)
  const recovered = yield* (yield* Engine).recover(sessionId)
  return { ...debts, recovered }
})

/**
 * The periodic pass (a scoped fiber); `null` turns it off. Without `intervalMs` the spacing is
 * `TimingPolicy.maintenanceInterval`.
 */
export const layer = (
  intervalMs?: number | null
): Layer.Layer<never, never, Engine | Coordinator | PiSession | RunStore | TurnIntentStore> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const policy = yield* TimingPolicy
      const spacing =
        intervalMs !== undefined
          ? intervalMs === null
            ? null
            : Duration.millis(intervalMs)
          : policy.maintenanceInterval
      if (spacing === null) return
      const coordinator = yield* Coordinator
      const pass = Effect.gen(function* () {
        const report = yield* reconcileSession
        if (report.created.length > 0 || report.madeEligible.length > 0) {
          yield* coordinator.syncFallbacks("periodic")
        }
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("reconciliation pass failed", cause)))
      yield* pass.pipe(Effect.delay(spacing), Effect.forever, Effect.forkScoped)
    })
  )
