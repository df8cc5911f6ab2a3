/**
 * A run's transitions: how a finished visit, or a stop with or without one, becomes the run's
 * next durable state. A visit's outcome is routed and written with the step in one fenced
 * transaction; a stop (cancel, park, controller interrupt, claim loss) aborts the turn it
 * must, then ends or parks the run. The runner calls these under the run's lock, so a
 * submission and a timeout or stop can never both win.
 */
import { Deferred, Effect, Ref } from "effect"
import { duration } from "../domain/text.ts"
import type { ClaimLost, StepOutcome, StepUpdate } from "../store/run-store.ts"
import type { EndBy, EndKind, RunEnd, RunError } from "../store/run-end.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { ActiveRun, RunnerDeps, StopRequest, VisitState } from "./active-run.ts"
import { decide, type NodeResult } from "./definition.ts"
import { interrupt, onClaimLost, recordAgentCancel, terminal } from "./interrupt.ts"
import { presentRun } from "./messages.ts"
import { answeredIntent, type VisitResult } from "./visit.ts"

type Step = Effect.Effect<string | null, ClaimLost | StoreFailure>

/** The facts a run's end is recorded with (decided here, never read back from its message). */
export const endAt = (
  kind: EndKind,
  by: EndBy,
  at: { readonly nodeId: string | null; readonly attemptId: string | null }
): RunEnd => ({ kind, by, nodeId: at.nodeId, attemptId: at.attemptId })

const present = (deps: RunnerDeps, run: ActiveRun, result: unknown, turnIntentId: string) =>
  Effect.flatMap(Ref.get(run.memory), (memory) =>
    presentRun(
      deps,
      {
        runId: run.runId,
        workflow: run.workflow,
        input: run.input,
        outputs: memory.outputs,
        results: memory.results,
        result
      },
      turnIntentId
    )
  )

interface Visited {
  readonly nodeId: string
  readonly attemptId: string
  readonly timeoutMs: number | null
}

/** Route a visit's outcome and write the step and the transition in one fenced transaction. */
export const conclude = (
  deps: RunnerDeps,
  run: ActiveRun,
  at: Visited,
  outcome: Exclude<StepOutcome, "cancelled">,
  value: { readonly output?: unknown; readonly error?: string },
  step: StepUpdate | undefined,
  closeRequest: string | undefined
): Step =>
  Effect.gen(function* () {
    const route = run.workflow.routes.get(at.nodeId)
    const decision = decide(at.nodeId, route, {
      input: run.input,
      outcome,
      output: value.output,
      error: value.error ?? null
    })
    const result: NodeResult = { outcome, attemptId: at.attemptId, ...value }
    const base = {
      attemptId: at.attemptId,
      ...(step === undefined ? {} : { step }),
      ...(closeRequest === undefined ? {} : { closeRequest })
    }
    // O(1) per step: the finished visit is added in place (see RunMemory).
    const remember = Ref.update(run.memory, (m) => {
      m.results[at.nodeId] = result
      if (outcome === "ok") m.outputs[at.nodeId] = value.output
      // A step rerouted after a takeover is already in the history rebuilt from its record, as
      // its last visit (it was the run's newest attempt): one comparison, not a scan of the run.
      if (m.history.at(-1)?.attemptId !== at.attemptId) m.history.push({ nodeId: at.nodeId, ...result })
      return { ...m, visit: null, finished: m.finished + 1 }
    })
    switch (decision._tag) {
      case "Next":
        yield* deps.store.advance(run.fence, { ...base, next: { _tag: "Continue", nodeId: decision.nodeId } })
        yield* remember
        return decision.nodeId
      case "Complete": {
        const ended = yield* deps.store.settle(run.fence, {
          ...base,
          next: {
            _tag: "End",
            state: "completed",
            result: value.output,
            end: endAt("completed", "engine", at)
          }
        })
        yield* remember
        // The run's terminal turn intent first; the presentation is its natural delivery. When
        // the intent could not be stored, reconciliation creates it and its fallback follows.
        const intentId = yield* terminal(deps, run, ended, "completed", "the run completed")
        if (intentId !== null) {
          yield* deps.background(Effect.asVoid(present(deps, run, value.output, intentId)))
        }
        return null
      }
      case "Fail":
      case "TimeOut": {
        const state = decision._tag === "Fail" ? "failed" : "timed_out"
        const error: RunError = { message: decision.message, nodeId: at.nodeId, original: decision.original }
        const end = endAt(decision._tag === "Fail" ? "failed" : "timedOut", "engine", at)
        const ended = yield* deps.store.settle(run.fence, {
          ...base,
          next: { _tag: "End", state, error, end }
        })
        yield* remember
        yield* terminal(deps, run, ended, state, decision.message)
        return null
      }
      case "Cancel":
        return null
    }
  })

/** Handle a stop request, with or without a visit in flight. */
export const onStop = Effect.fn("Runner.stop")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState | null,
  stop: StopRequest,
  /** The node the run stands at when no visit is in flight (a step boundary). */
  boundaryNode: string | null = null
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, stop: stop._tag })
  if (stop._tag === "ClaimLost") return yield* onClaimLost(deps, run)
  const submitted = visit !== null && (yield* Deferred.isDone(visit.submitted))
  const activeTurn = visit?.delivered === true && !submitted
  const at = { nodeId: visit?.nodeId ?? null, attemptId: visit?.attemptId ?? null }
  // A visit whose submission already landed keeps its `ok` step; resume routes from it.
  const settleVisit = (step: StepUpdate, closeRequest: string) =>
    visit === null || submitted ? {} : { attemptId: visit.attemptId, step, closeRequest }
  const outcome = (outcome: StepOutcome, error: string): StepUpdate => ({
    _tag: "Outcome",
    outcome,
    error,
    timeoutMs: visit?.timeoutMs ?? null
  })
  const park = (reason: string) =>
    deps.store.settle(run.fence, {
      ...settleVisit({ _tag: "Interrupted", reason: `parked: ${reason}` }, "parked"),
      next: { _tag: "Park", reason }
    })
  switch (stop._tag) {
    case "Cancel": {
      const reason = `cancelled by the ${stop.by}`
      if (stop.by === "agent" && activeTurn && visit !== null) {
        yield* interrupt(deps, run, visit, "agentCancelled", reason)
      } else if (stop.by === "agent") {
        yield* recordAgentCancel(deps, run, { nodeId: at.nodeId ?? boundaryNode, attemptId: at.attemptId })
      }
      const ended = yield* deps.store.settle(run.fence, {
        ...settleVisit(outcome("cancelled", reason), "cancelled"),
        next: {
          _tag: "End",
          state: "cancelled",
          error: { message: reason, nodeId: at.nodeId, original: null },
          cancelledBy: stop.by,
          end: endAt("cancelled", stop.by, { nodeId: at.nodeId ?? boundaryNode, attemptId: at.attemptId })
        }
      })
      // A direct cancel is quiet; an earlier system abort of this run still gets its successor.
      // The model's turn on the step stops too, wherever the cancel came from (after the end is
      // stored, so that settle finds no run to hold).
      if (stop.by === "user")
        yield* deps.events.publish({
          _tag: "Quiet",
          run: run.ref,
          kind: "directCancel",
          ...(activeTurn ? { stopsTurn: true as const } : {})
        })
      yield* terminal(deps, run, ended, "cancelled", reason)
      return null
    }
    case "Park":
      yield* park(stop.reason)
      if (stop.quiet !== null) yield* deps.events.publish({ _tag: "Quiet", run: run.ref, kind: stop.quiet })
      return null
    case "Interrupt": {
      if (activeTurn && visit !== null) {
        yield* interrupt(deps, run, visit, "controllerInterrupted", stop.reason)
      }
      if (stop.afterwards === "park") {
        yield* park(`interrupted: ${stop.reason}`)
        return null
      }
      const message = `interrupted by the controller: ${stop.reason}`
      const ended = yield* deps.store.settle(run.fence, {
        ...settleVisit(outcome("failed", message), "interrupted"),
        next: {
          _tag: "End",
          state: "failed",
          error: { message, nodeId: at.nodeId, original: null },
          end: endAt("controllerInterrupted", "controller", {
            nodeId: at.nodeId ?? boundaryNode,
            attemptId: at.attemptId
          })
        }
      })
      yield* terminal(deps, run, ended, "failed", message)
      return null
    }
  }
})

/** Settle a finished visit. A submission that landed before a timeout or stop was handled wins. */
export const settleVisit = Effect.fn("Runner.settle")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  started: VisitState,
  raw: VisitResult
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, nodeId: started.nodeId, outcome: raw._tag })
  const visit = (yield* Ref.get(run.memory)).visit ?? started
  if (raw._tag === "Stopped") return yield* onStop(deps, run, visit, raw.stop)
  const at = { nodeId: visit.nodeId, attemptId: visit.attemptId, timeoutMs: visit.timeoutMs ?? null }
  if (yield* Deferred.isDone(visit.submitted)) {
    const output = yield* Deferred.await(visit.submitted)
    return yield* conclude(deps, run, at, "ok", { output }, undefined, undefined)
  }
  switch (raw._tag) {
    case "Ok": {
      const step = { _tag: "Outcome", outcome: "ok", output: raw.output, timeoutMs: at.timeoutMs } as const
      return yield* conclude(deps, run, at, "ok", { output: raw.output }, step, undefined)
    }
    case "Failed": {
      const step = {
        _tag: "Outcome",
        outcome: "failed",
        error: raw.error,
        timeoutMs: at.timeoutMs
      } as const
      return yield* conclude(deps, run, at, "failed", { error: raw.error }, step, "failed")
    }
    case "Waiting": {
      // The run waits without a runner: this one stops; its presentation goes out detached.
      yield* Ref.update(run.memory, (m) => ({ ...m, visit: null }))
      const answers = yield* answeredIntent(run)
      yield* deps.onWait({ wait: raw.wait, workflowName: run.workflow.name, answers })
      return null
    }
    case "TimedOut": {
      const error = `timed out after ${duration(raw.timeoutMs)}`
      if (visit.node.type === "agent" && visit.delivered) {
        yield* interrupt(deps, run, visit, "timedOut", `step "${visit.nodeId}" ${error}`)
      }
      const step = { _tag: "Outcome", outcome: "timed_out", error, timeoutMs: raw.timeoutMs } as const
      return yield* conclude(deps, run, at, "timed_out", { error }, step, "timed_out")
    }
  }
})
