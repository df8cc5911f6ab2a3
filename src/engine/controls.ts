/**
 * The engine's cancel and pause: a run this process drives is told to stop and awaited; any
 * other is changed in the store at once (no live claim) or asked of its owner. A user's cancel is
 * quiet; the agent's cancel of a run no runner holds owes the run's terminal turn. A run waiting
 * at a checkpoint cannot be paused (nothing runs).
 */
import { Clock, Deferred, Effect } from "effect"
import { terminalEvent } from "../interruption/run-debts.ts"
import type { SourceEventsService } from "../interruption/source-events.ts"
import type { RunNotFound, RunRecord, RunStoreService } from "../store/run-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { type ActiveRun, runRefOf } from "./active-run.ts"
import type { EngineService } from "./engine.ts"
import { InvalidRunState } from "./errors.ts"
import { summarize } from "./messages.ts"

export interface ControlEnv {
  readonly store: RunStoreService
  readonly events: SourceEventsService
  readonly activeRun: (runId: string) => Effect.Effect<ActiveRun | undefined>
  readonly requireRun: (runId: string) => Effect.Effect<RunRecord, RunNotFound | StoreFailure>
}

export const makeControls = ({ store, events, activeRun, requireRun }: ControlEnv) => {
  const now = Clock.currentTimeMillis
  const cancel: EngineService["cancel"] = Effect.fn("Engine.cancel")(function* (runId, { by }) {
    yield* Effect.annotateCurrentSpan({ runId, by })
    const run = yield* activeRun(runId)
    if (run !== undefined) {
      yield* Deferred.succeed(run.stop, { _tag: "Cancel", by })
      yield* Deferred.await(run.finished)
      const after = yield* requireRun(runId)
      if (after.state === "cancelled") return summarize(after, yield* now)
    }
    const result = yield* store.cancel(runId, by)
    if (result._tag === "Refused") {
      return yield* new InvalidRunState({
        runId,
        state: result.run.state,
        action: "cancel",
        problem: "it has already ended"
      })
    }
    if (result._tag === "Cancelled" && by === "user") {
      yield* events.publish({ _tag: "Quiet", run: runRefOf(result.run), kind: "directCancel" })
    }
    // The agent cancelled a run no runner holds (queued, waiting, parked): its terminal turn.
    const ended = result._tag === "Cancelled" && by === "agent" ? terminalEvent(result.run, null) : null
    if (ended !== null) yield* events.publish(ended)
    return summarize(result.run, yield* now)
  })

  const pause: EngineService["pause"] = Effect.fn("Engine.pause")(function* (runId) {
    yield* Effect.annotateCurrentSpan("runId", runId)
    const waiting = yield* requireRun(runId)
    if (waiting.waitRequestId !== null) {
      return yield* new InvalidRunState({
        runId,
        state: waiting.state,
        action: "pause",
        problem: "it waits for an answer already (nothing runs); cancel it or answer it"
      })
    }
    const result = yield* store.requestPause(runId)
    if (result._tag === "Refused") {
      const queued = result.run.state === "queued"
      return yield* new InvalidRunState({
        runId,
        state: result.run.state,
        action: "pause",
        problem: queued ? "it has not started yet (cancel it instead)" : "it has already ended"
      })
    }
    yield* events.publish({ _tag: "Quiet", run: runRefOf(result.run), kind: "pause" })
    return summarize(result.run, yield* now)
  })

  return { cancel, pause }
}
