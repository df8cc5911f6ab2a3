/**
 * The runner: one fiber per claimed run. It loops over step boundaries (stop, pause, maxSteps),
 * visits and settlements (`transitions.ts`), settles every outcome durably under its claim, and
 * publishes the source events the successor-turn core needs. Transitions take the run's lock,
 * so a submission and a timeout or stop can never both win.
 *
 * Between steps it yields to the event loop. A run whose steps never wait (synchronous compute
 * nodes over synchronous SQLite calls) would otherwise keep its fiber, and so Node's thread, until
 * the run ends: Pi could answer no RPC, draw no TUI frame and see no Escape meanwhile. On the live
 * clock it is a macrotask (`setImmediate`): `Effect.yieldNow` only hands the fiber back to
 * Effect's scheduler, which resumes it from a microtask, before any I/O callback runs. Under
 * another clock (TestClock, a simulation's) time and turns are that clock's: it gets a zero
 * sleep, so a test that drives the clock also drives this pause.
 */
import { Clock, Context, DefaultServices, Deferred, Duration, Effect, Option, Ref, Schedule } from "effect"
import type { StepRecord } from "../store/run-store.ts"
import { type ActiveRun, newId, ownerOf, type RunnerDeps, type VisitState } from "./active-run.ts"
import { onClaimLost, terminal } from "./interrupt.ts"
import { withRunnerSettle } from "./store-retry.ts"
import { deadlineOrigin, SUPERSEDED } from "./timeout.ts"
import { conclude, endAt, onStop, settleVisit } from "./transitions.ts"
import { executeVisit } from "./visit.ts"

const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)

const macrotask: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Let Node's pending I/O callbacks and timers run, then continue. */
export const yieldToEventLoop: Effect.Effect<void> = Effect.clockWith((clock) =>
  clock === liveClock ? macrotask : clock.sleep(Duration.zero)
)

/** At a step boundary: honour stop, pause and maxSteps, then start the next visit. */
const boundary = Effect.fn("Runner.boundary")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  nodeId: string,
  deadlineFrom: number | null
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, nodeId })
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
  // The claim's owner ran it (a token without one, from another writer, names nobody).
  const owner = ownerOf(run.fence.token)
  yield* deps.store.startStep(run.fence, {
    nodeId,
    attemptId,
    ...(owner === null ? {} : { runner: { host: owner.host, pid: owner.pid } })
  })
  const visit: VisitState = {
    nodeId,
    attemptId,
    node,
    submitted: yield* Deferred.make<unknown>(),
    requestId: null,
    delivered: false,
    timeoutMs: undefined,
    deadlineFrom,
    startedAt: yield* Clock.currentTimeMillis
  }
  yield* Ref.update(run.memory, (m) => ({ ...m, visit }))
  return visit
})

/**
 * Where a claimed run continues: its current node, after closing an attempt a previous runner
 * left in flight (it reruns with a fresh attempt), or routing from an attempt whose submission
 * landed before the previous runner could route it.
 */
const prepare = Effect.fn("Runner.prepare")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  steps: ReadonlyArray<StepRecord>,
  current: {
    readonly nodeId: string
    readonly attemptId: string | null
  }
) {
  yield* Effect.annotateCurrentSpan("runId", run.runId)
  const step = current.attemptId === null ? undefined : steps.find((s) => s.attemptId === current.attemptId)
  if (step === undefined || step.interrupted !== null) return current.nodeId
  if (step.outcome === null) {
    yield* deps.store.advance(run.fence, {
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
export const runClaimed = Effect.fn("Runner.run")(
  function* (
    runnerDeps: RunnerDeps,
    run: ActiveRun,
    steps: ReadonlyArray<StepRecord>,
    current: { readonly nodeId: string; readonly attemptId: string | null }
  ) {
    yield* Effect.annotateCurrentSpan({ runId: run.runId, workflow: run.workflow.name })
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
  },
  (effect, runnerDeps, run): Effect.Effect<void> =>
    effect.pipe(
      Effect.scoped,
      Effect.catchTags({
        ClaimLost: () => Effect.asVoid(onClaimLost(runnerDeps, run)),
        // The claim stays until its lease expires; a later resume takes the run over.
        StoreFailure: (error) =>
          Effect.logError(`workflow run ${run.runId}: store failure, runner stopped: ${error.message}`)
      }),
      Effect.ensuring(Ref.update(run.memory, (m) => ({ ...m, visit: null })))
    )
)
