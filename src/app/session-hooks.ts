/**
 * What happens at each Pi session event, as programs over the services. The adapter calls
 * these and applies the returned flags; the decisions (is this abort the user's Escape? what
 * runs after a settle?) live here, not in the adapter.
 *
 * The durable debts of a session are paid at session start and on a periodic pass: ended runs
 * owe their terminal turn intents (`reconcileDebts`; a completed run's intent whose presentation
 * never arrived becomes eligible, so its fallback follows), and runs of a dead owner are taken
 * over (`Engine.recover`).
 */
import { Effect, Layer, Option, Schema } from "effect"
import { Coordinator } from "../delivery/coordinator.ts"
import { USER_HOLD_REASON } from "../domain/run-condition.ts"
import { TimingPolicy } from "../domain/timing-policy.ts"
import { Engine } from "../engine/engine.ts"
import { PRESENTATION_TYPE } from "../domain/message-types.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import { reconcileDebts } from "../interruption/reconcile.ts"
import { Notifier } from "../notifications/notifier.ts"
import { PiSession } from "../session/pi-session.ts"
import type { RunStore } from "../store/run-store.ts"
import type { TurnIntentStore } from "../store/turn-intent-store.ts"
import { heldAfterEscape } from "./replies.ts"
import { remindAfterSettle } from "./step-reminders.ts"

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
 * The periodic reconciliation pass (a scoped fiber), spaced by `TimingPolicy.maintenanceInterval`
 * (null: none). When a pass made an intent eligible, a fallback pass follows.
 */
export const layerMaintenance: Layer.Layer<
  never,
  never,
  Engine | Coordinator | PiSession | RunStore | TurnIntentStore
> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const spacing = (yield* TimingPolicy).maintenanceInterval
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

/** Log and continue: a hook failure must never break Pi's event dispatch. */
const guarded = <A, E, R>(label: string, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.asVoid,
    Effect.catchAllCause((cause) =>
      Effect.flatMap(PiSession, (session) =>
        session.notify(`pi-workflow-turns: ${label} failed: ${cause.toString().slice(0, 500)}`, "error")
      )
    )
  )

export interface StartOutcome {
  /** The session's workflow is held by the user (Escape before a restart): keep holding. */
  readonly userHold: boolean
}

/** Is the session's workflow held by the user? Read from the run row, not from memory. */
export const userHeld = (sessionId: string) =>
  Effect.flatMap(Engine, (engine) =>
    engine.active(sessionId).pipe(
      Effect.map(
        (active) =>
          Option.isSome(active) &&
          active.value.state === "waiting" &&
          active.value.parkedReason === USER_HOLD_REASON
      ),
      Effect.orElseSucceed(() => false)
    )
  )

/**
 * Session start: restore a durable user hold, deliver what is owed (not while held), then
 * continue parked runs and queued launches.
 */
export const onSessionStart = Effect.gen(function* () {
  const coordinator = yield* Coordinator
  const engine = yield* Engine
  const sessionId = yield* (yield* PiSession).sessionId
  const userHold = yield* userHeld(sessionId)
  // Debts first (intents of ended runs, takeover of dead owners' runs, presentations), so the
  // fallback sync below already sees every eligible intent.
  yield* guarded("run reconciliation", reconcileSession)
  // Passive notifications this session missed (stored, never shown): display only, no turn.
  yield* guarded("notification delivery at session start", (yield* Notifier).deliverPending)
  if (!userHold) yield* guarded("fallback sync at session start", coordinator.onSessionStart)
  if (!userHold) yield* guarded("queued launch activation", engine.activate(sessionId))
  return { userHold } satisfies StartOutcome
})

export interface SettleOutcome {
  /** The user interrupted an active workflow turn (Escape): hold the workflow. */
  readonly userHold: boolean
}

/**
 * Pi's quit aborts the model's turn exactly as Escape does and shuts the session down right
 * after (its dispose: abort, then `session_shutdown`). The Pi adapter waits this long before it
 * holds a run after an unowned abort: a shutdown within it parks the run as shut down instead,
 * so a quit mid-step is `parked (shutdown)`, not `held (Escape)`.
 */
export const QUIT_GRACE_MS = 500

/** The session's run standing at an open agent step (a running run with its request open). */
const runAtOpenStep = Effect.gen(function* () {
  const session = yield* PiSession
  const active = yield* (yield* Engine)
    .active(yield* session.sessionId)
    .pipe(Effect.orElseSucceed(() => Option.none()))
  return Option.filterMap(active, (run) =>
    run.openRequestId !== null && run.state === "running" ? Option.some(run.runId) : Option.none()
  )
})

/**
 * The run an aborted settle would hold: an aborted turn that this process did not abort is the
 * user's Escape when it stopped an active workflow turn (`runAtOpenStep`).
 */
export const escapedRun = (aborted: boolean) =>
  Effect.gen(function* () {
    const systemAborts = yield* (yield* AbortBookkeeping).inFlight
    if (!aborted || systemAborts.length > 0) return Option.none<string>()
    return yield* runAtOpenStep
  })

/**
 * Hold `runId` after Escape, if it still stands at an open step of this session (the grace may
 * have seen it move on). Park first (stop the runner, release the claim, keep the interrupted node
 * for a rerun), then pause: with no live claim the run is held as `waiting` at once. A pause
 * alone would only take effect at the next step boundary, which the stopped step never reaches.
 * Whether it held.
 */
export const holdAfterEscape = (runId: string) =>
  Effect.gen(function* () {
    if (!Option.contains(yield* runAtOpenStep, runId)) return false
    const session = yield* PiSession
    const engine = yield* Engine
    yield* guarded(
      "hold after Escape",
      Effect.zipRight(engine.park(runId, USER_HOLD_REASON), engine.pause(runId)).pipe(
        // Pi itself says only "Operation aborted": say once what happened to the run.
        Effect.tap((held) => session.notify(heldAfterEscape(held), "warning"))
      )
    )
    return true
  })

/**
 * First half of `agent_settled`, before anything waiting for idle is released: the user's Escape
 * (`escapedRun`) holds the run as `waiting` (no intent, no automatic turn) until
 * `/workflow resume`. At once: the Pi adapter splits it to wait `QUIT_GRACE_MS` first.
 */
export const classifySettle = (aborted: boolean) =>
  Effect.gen(function* () {
    const escaped = yield* escapedRun(aborted)
    if (Option.isNone(escaped)) return { userHold: false } satisfies SettleOutcome
    return { userHold: yield* holdAfterEscape(escaped.value) } satisfies SettleOutcome
  })

/**
 * Second half of `agent_settled`: clear abort bookkeeping and sync fallbacks, remind the model
 * of a step it left unanswered (never when this pass delivered a fallback: one message answers
 * one settle), then activate a queued launch unless the user holds the workflow.
 */
export const afterSettle = (held: boolean, settled?: { readonly aborted: boolean }) =>
  Effect.gen(function* () {
    const sync = yield* Effect.either((yield* Coordinator).onSettled)
    if (sync._tag === "Left") yield* guarded("fallback sync after settle", Effect.fail(sync.left))
    const answered = sync._tag === "Right" && sync.right.delivered.length > 0
    // Only after a model turn (not when a command activates the workflow): a reminder answers a
    // turn that ended without the step's `submit`.
    if (settled !== undefined && !held && !answered) {
      yield* guarded("step reminder", remindAfterSettle(settled.aborted))
    }
    // Notifications written by another process for this session's runs.
    yield* guarded("notification delivery after settle", (yield* Notifier).deliverPending)
    if (!held) {
      const engine = yield* Engine
      yield* guarded("queued launch activation", engine.activate(yield* (yield* PiSession).sessionId))
    }
  })

/** Session shutdown: park what runs here (quiet), so another start can resume it. */
export const onShutdown = Effect.flatMap(Engine, (engine) => engine.shutdown)
