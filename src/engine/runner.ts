/**
 * The runner: one fiber per claimed run. It loops over step boundaries (stop, pause, maxSteps),
 * visits and settlements; settles every outcome durably under its claim, and publishes the
 * source events the successor-turn core needs. Transitions take the run's lock, so a
 * submission and a timeout or stop can never both win.
 */
import { Clock, Deferred, Effect, Option, Ref, Schedule } from "effect"
import type { StoreFailure } from "../store/store-errors.ts"
import type { ClaimLost } from "../store/run-errors.ts"
import type {
  EndBy,
  EndKind,
  RunEnd,
  RunError,
  StepOutcome,
  StepRecord,
  StepUpdate
} from "../store/run-store.ts"
import { type ActiveRun, newId, type RunnerDeps, type StopRequest, type VisitState } from "./active-run.ts"
import type { NodeResult } from "./definition.ts"
import { yieldToEventLoop } from "./event-loop.ts"
import { interrupt, onClaimLost, recordAgentCancel, terminal } from "./interrupt.ts"
import { presentRun } from "./presentation.ts"
import { decide } from "./routing.ts"
import { deadlineOrigin, SUPERSEDED } from "./step-deadline.ts"
import { withRunnerSettle } from "./runner-settle.ts"
import { executeVisit, type VisitResult } from "./visit.ts"
import { duration } from "../domain/text.ts"

type Step = Effect.Effect<string | null, ClaimLost | StoreFailure>

/** The facts a run's end is recorded with (decided here, never read back from its message). */
const endAt = (
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
const conclude = (
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
        yield* deps.store.settle(run.fence, { ...base, next: { _tag: "Continue", nodeId: decision.nodeId } })
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
const onStop = (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState | null,
  stop: StopRequest,
  /** The node the run stands at when no visit is in flight (a step boundary). */
  boundaryNode: string | null = null
): Effect.Effect<null, ClaimLost | StoreFailure> =>
  Effect.gen(function* () {
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
        if (stop.by === "user")
          yield* deps.events.publish({ _tag: "Quiet", run: run.ref, kind: "directCancel" })
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
const settleVisit = (deps: RunnerDeps, run: ActiveRun, started: VisitState, raw: VisitResult): Step =>
  Effect.gen(function* () {
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

/** At a step boundary: honour stop, pause and maxSteps, then start the next visit. */
const boundary = (deps: RunnerDeps, run: ActiveRun, nodeId: string, deadlineFrom: number | null) =>
  Effect.gen(function* () {
    const pending = yield* Deferred.poll(run.stop)
    if (Option.isSome(pending)) return yield* onStop(deps, run, null, yield* pending.value, nodeId)
    // The claim and its control requests only: the whole row (snapshot, step count) costs O(run).
    const control = yield* deps.store.control(run.fence).pipe(
      Effect.map(Option.some),
      Effect.catchTag("ClaimLost", () => Effect.succeedNone)
    )
    if (Option.isNone(control)) return yield* onClaimLost(deps, run)
    const flags = control.value
    if (flags.cancelRequested !== null) {
      return yield* onStop(deps, run, null, { _tag: "Cancel", by: flags.cancelRequested }, nodeId)
    }
    if (flags.pauseRequested) {
      yield* deps.store.settle(run.fence, { next: { _tag: "Hold" } })
      return null
    }
    const memory = yield* Ref.get(run.memory)
    const node = run.workflow.nodes.get(nodeId)
    if (memory.finished >= run.workflow.maxSteps || node === undefined) {
      const message =
        node === undefined
          ? `node "${nodeId}" does not exist in the loaded workflow`
          : `the run reached maxSteps (${run.workflow.maxSteps}) before visiting node "${nodeId}"`
      const ended = yield* deps.store.settle(run.fence, {
        next: {
          _tag: "End",
          state: "failed",
          error: { message, nodeId, original: null },
          // A node the loaded workflow lacks is a plain failure; the step budget is its own kind.
          end: endAt(node === undefined ? "failed" : "maxSteps", "engine", { nodeId, attemptId: null })
        }
      })
      yield* terminal(deps, run, ended, "failed", message)
      return null
    }
    const attemptId = yield* newId("att")
    yield* deps.store.startStep(run.fence, { nodeId, attemptId })
    const visit: VisitState = {
      nodeId,
      attemptId,
      node,
      submitted: yield* Deferred.make<unknown>(),
      requestId: null,
      delivered: false,
      timeoutMs: undefined,
      deadlineFrom
    }
    yield* Ref.update(run.memory, (m) => ({ ...m, visit }))
    return visit
  })

/**
 * Where a claimed run continues: its current node, after closing an attempt a previous runner
 * left in flight (it reruns with a fresh attempt), or routing from an attempt whose submission
 * landed before the previous runner could route it.
 */
const prepare = (
  deps: RunnerDeps,
  run: ActiveRun,
  steps: ReadonlyArray<StepRecord>,
  current: {
    readonly nodeId: string
    readonly attemptId: string | null
  }
): Step =>
  Effect.gen(function* () {
    const step = current.attemptId === null ? undefined : steps.find((s) => s.attemptId === current.attemptId)
    if (step === undefined || step.interrupted !== null) return current.nodeId
    if (step.outcome === null) {
      yield* deps.store.settle(run.fence, {
        attemptId: step.attemptId,
        step: { _tag: "Interrupted", reason: SUPERSEDED },
        closeRequest: "superseded",
        next: { _tag: "Continue", nodeId: step.nodeId }
      })
      return step.nodeId
    }
    if (step.outcome === "cancelled") return null
    const at = { nodeId: step.nodeId, attemptId: step.attemptId, timeoutMs: step.timeoutMs }
    const value = {
      ...Option.match(step.output, { onNone: () => ({}), onSome: (output) => ({ output }) }),
      ...(step.error === null ? {} : { error: step.error })
    }
    // The step row is already final; undo its count so the memory reflects one visit.
    yield* Ref.update(run.memory, (m) => ({ ...m, finished: m.finished - 1 }))
    return yield* conclude(deps, run, at, step.outcome, value, undefined, undefined)
  })

const renewals = (deps: RunnerDeps, run: ActiveRun) =>
  Clock.currentTimeMillis.pipe(
    Effect.flatMap((before) =>
      deps.store.renew(run.fence, deps.settings.leaseMs).pipe(
        Effect.tap(() =>
          Ref.update(run.memory, (m) => ({
            ...m,
            leaseUntil: Math.max(m.leaseUntil, before + deps.settings.leaseMs)
          }))
        )
      )
    ),
    Effect.flatMap((flags) =>
      flags.cancelRequested === null
        ? Effect.void
        : Deferred.succeed(run.stop, { _tag: "Cancel", by: flags.cancelRequested })
    ),
    Effect.catchTags({
      ClaimLost: () =>
        Effect.zipRight(
          Ref.update(run.memory, (m) => ({ ...m, claimGone: true })),
          Deferred.succeed(run.stop, { _tag: "ClaimLost" })
        ),
      StoreFailure: (error) =>
        Effect.logWarning(`workflow run ${run.runId}: lease renewal failed: ${error.message}`)
    }),
    // A renewal that dies (a driver throw) must not end the renewals: the runner goes on holding
    // the run, and without them its lease would run out under a live runner nobody takes over.
    Effect.catchAllDefect((defect) =>
      Effect.logWarning(`workflow run ${run.runId}: lease renewal failed: ${String(defect)}`)
    ),
    Effect.schedule(Schedule.spaced(deps.settings.renewEveryMs))
  )

/** Drive a claimed run until it ends, holds, parks or loses its claim. */
export const runClaimed = (
  runnerDeps: RunnerDeps,
  run: ActiveRun,
  steps: ReadonlyArray<StepRecord>,
  current: { readonly nodeId: string; readonly attemptId: string | null }
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const deps = withRunnerSettle(runnerDeps, run)
    yield* Effect.forkScoped(renewals(deps, run))
    let next = yield* run.lock.withPermits(1)(prepare(deps, run, steps, current))
    // The first visit continues the one a dead owner left in flight: its deadline is durable.
    let deadlineFrom = next === null ? null : deadlineOrigin(steps, next)
    while (next !== null) {
      const visit = yield* run.lock.withPermits(1)(boundary(deps, run, next, deadlineFrom))
      deadlineFrom = null
      if (visit === null) return
      const result = yield* executeVisit(deps, run, visit)
      next = yield* run.lock.withPermits(1)(settleVisit(deps, run, visit, result))
      // Between steps, not under the run's lock: Pi's RPC, TUI and Escape get their turn.
      if (next !== null) yield* yieldToEventLoop
    }
  }).pipe(
    Effect.scoped,
    Effect.catchTags({
      ClaimLost: () => Effect.asVoid(onClaimLost(runnerDeps, run)),
      // The claim stays until its lease expires; a later resume takes the run over.
      StoreFailure: (error) =>
        Effect.logError(`workflow run ${run.runId}: store failure, runner stopped: ${error.message}`)
    }),
    Effect.ensuring(Ref.update(run.memory, (m) => ({ ...m, visit: null })))
  )
