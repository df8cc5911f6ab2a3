/**
 * The Engine implementation: a registry of runs this process executes (one runner fiber each,
 * in the engine's scope), plus the queue, control and status operations over the RunStore.
 * Closing the layer parks the runs still executing.
 */
import { Clock, Deferred, Effect, FiberMap, FiberSet, Layer, Option, Ref } from "effect"
import { InvalidInput } from "../domain/errors.ts"
import { SHUTDOWN_PARK } from "../domain/run-condition.ts"
import { Coordinator } from "../delivery/coordinator.ts"
import { TimingPolicy } from "../domain/timing-policy.ts"
import { SourceEvents } from "../interruption/source-events.ts"
import { isTerminal, RunNotFound, type RunRecord, RunStore } from "../store/run-store.ts"
import {
  type ActiveRun,
  claimToken,
  type EngineSettings,
  makeActiveRun,
  newId,
  ownerIsDead,
  type RunnerDeps,
  runIdOf,
  runRefOf,
  type StopRequest,
  workflowRefOf
} from "./active-run.ts"
import { makeCheckpoints } from "./checkpoint.ts"
import { makeControls } from "./controls.ts"
import { openStepFor } from "./open-step.ts"
import { adopt } from "./adopt.ts"
import { Engine, type EngineConfig, type EngineService } from "./engine.ts"
import { InvalidRunState, InvalidWorkflowInput, RunBusy } from "./errors.ts"
import { type RunSummary, runStatus, StepProgress, summarize } from "./messages.ts"
import {
  launchCheck,
  type RegisteredWorkflow,
  snapshotOf,
  sourceProblem,
  WorkflowRegistry
} from "./registry.ts"
import { runClaimed } from "./runner.ts"
import { typedStore, withLockRetries } from "./store-retry.ts"
import { DEFAULT_TIMEOUT_MS } from "./timeout.ts"
import { sentJsonProblem } from "./validate.ts"
import { submit as submitRequest } from "./visit.ts"

const settingsOf = (config: EngineConfig): EngineSettings => ({
  defaultTimeoutMs: config.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
  leaseMs: config.leaseMs ?? 60_000,
  renewEveryMs: config.renewEveryMs ?? 20_000
})

export const make = (config: EngineConfig = {}) =>
  Effect.gen(function* () {
    const store = typedStore(yield* RunStore)
    const registry = yield* WorkflowRegistry
    const coordinator = yield* Coordinator
    const events = yield* SourceEvents
    const progress = yield* Effect.serviceOption(StepProgress)
    const settings = settingsOf(config)
    const fibers = yield* FiberMap.make<string>()
    const detached = yield* FiberSet.make()
    const watchers = yield* FiberMap.make<string>()
    const handles = yield* Ref.make<ReadonlyMap<string, ActiveRun>>(new Map())
    const closing = yield* Ref.make(false)
    const deps: RunnerDeps = {
      store: withLockRetries(store),
      settleRetry: (yield* TimingPolicy).settleRetry,
      closing: Ref.get(closing),
      coordinator,
      events,
      settings,
      background: (effect) => Effect.asVoid(FiberSet.run(detached, effect)),
      progress,
      onWait: (waiting) => checkpoints.onWait(waiting)
    }

    const now = Clock.currentTimeMillis
    const activeRun = (runId: string) => Effect.map(Ref.get(handles), (map) => map.get(runId))
    const requireRun = (runId: string) =>
      Effect.flatMap(
        store.get(runId),
        Option.match({ onNone: () => new RunNotFound({ runId }), onSome: Effect.succeed })
      )
    const summary = (runId: string) =>
      Effect.flatMap(requireRun(runId), (record) => Effect.map(now, (at) => summarize(record, at)))

    const spawn = (record: RunRecord, token: string, registered: RegisteredWorkflow) =>
      Effect.gen(function* () {
        const steps = yield* store.steps(record.runId)
        const run = yield* makeActiveRun(record, token, registered.workflow, steps)
        yield* Ref.update(handles, (map) => new Map(map).set(run.runId, run))
        const current = {
          nodeId: record.currentNodeId ?? registered.workflow.startAt,
          attemptId: record.currentAttemptId
        }
        const done = Effect.zipRight(
          Ref.update(handles, (map) => {
            const next = new Map(map)
            next.delete(run.runId)
            return next
          }),
          Deferred.succeed(run.finished, undefined)
        )
        yield* FiberMap.run(fibers, run.runId, Effect.ensuring(runClaimed(deps, run, steps, current), done))
      })

    const start: EngineService["start"] = Effect.fn("Engine.start")(function* (input) {
      yield* Effect.annotateCurrentSpan("sessionId", input.sessionId)
      if (
        typeof input.sessionId !== "string" ||
        input.sessionId.length === 0 ||
        input.sessionId.length > 512
      ) {
        return yield* new InvalidInput({
          field: "sessionId",
          message: "sessionId must be a non-empty string"
        })
      }
      const registered = yield* registry.get(input.workflow)
      const workflow = registered.workflow
      const problem = sentJsonProblem(input.input, "input") ?? workflow.input?.(input.input) ?? null
      if (problem !== null)
        return yield* new InvalidWorkflowInput({
          workflow: workflow.name,
          problem,
          example: workflow.inputExample
        })
      const runId = yield* runIdOf(workflow.name, yield* now)
      const record = yield* store.reserve({
        runId,
        workflowName: workflow.name,
        workflowRef: workflowRefOf(workflow.name, workflow.revision),
        revision: workflow.revision,
        sourceFingerprint: registered.fingerprint,
        snapshot: snapshotOf(workflow),
        targetSessionId: input.sessionId,
        origin: input.origin,
        input: input.input,
        startAt: workflow.startAt,
        maxSteps: workflow.maxSteps
      })
      return summarize(record, yield* now)
    })

    const activate: EngineService["activate"] = Effect.fn("Engine.activate")(function* (sessionId) {
      yield* Effect.annotateCurrentSpan("sessionId", sessionId)
      const queued = yield* store.nextQueued(sessionId)
      if (Option.isNone(queued)) return Option.none()
      const token = claimToken((yield* newId("x")).slice(2))
      const claimed = yield* store
        .claim({ runId: queued.value.runId, token, leaseMs: settings.leaseMs, mode: "activate" })
        .pipe(
          Effect.catchTags({
            RunNotFound: () => Effect.succeed(null),
            ClaimRefused: () => Effect.succeed(null)
          })
        )
      // Another process activated it first.
      if (claimed === null) return Option.none()
      const check = yield* launchCheck(registry, claimed)
      if ("problem" in check) {
        const error = { message: check.problem, nodeId: null, original: null }
        const ended = yield* store
          .settle(
            { runId: claimed.runId, token },
            {
              next: {
                _tag: "End",
                state: "failed",
                error,
                end: { kind: "launchFailed", by: "engine", nodeId: null, attemptId: null }
              }
            }
          )
          .pipe(Effect.catchTag("ClaimLost", () => Effect.succeed(null)))
        if (ended === null) return Option.none()
        yield* events.publish({ _tag: "LaunchFailed", run: runRefOf(claimed), reason: check.problem })
        return Option.some(summarize(ended, yield* now))
      }
      yield* spawn(claimed, token, check.registered)
      return Option.some(summarize(claimed, yield* now))
    })

    /** Hand a stop to this process's runner and wait until it has stopped. */
    const signal = (runId: string, action: string, stop: StopRequest) =>
      Effect.gen(function* () {
        const run = yield* activeRun(runId)
        if (run === undefined) {
          const record = yield* requireRun(runId)
          return yield* new InvalidRunState({
            runId,
            state: record.state,
            action,
            problem: "it is not running in this process"
          })
        }
        yield* Deferred.succeed(run.stop, stop)
        yield* Deferred.await(run.finished)
        return yield* summary(runId)
      })

    const { cancel, pause } = makeControls({ store, events, activeRun, requireRun })

    const resume: EngineService["resume"] = Effect.fn("Engine.resume")(function* (runId) {
      yield* Effect.annotateCurrentSpan("runId", runId)
      return yield* resumeRun(runId, undefined)
    })

    const resumeRun = (runId: string, takeoverFrom: string | undefined) =>
      Effect.gen(function* () {
        const record = yield* requireRun(runId)
        const refuse = (problem: string) =>
          new InvalidRunState({ runId, state: record.state, action: "resume", problem })
        if (record.waitRequestId !== null)
          return yield* refuse(
            `it waits for an answer (request ${record.waitRequestId}): /workflow answer ${runId} <text>`
          )
        // A pause the owner has not reached yet is simply withdrawn: the run never stopped.
        const withdrawn = yield* store.withdrawPause(runId)
        if (Option.isSome(withdrawn)) return summarize(withdrawn.value, yield* now)
        if ((yield* activeRun(runId)) !== undefined)
          return yield* refuse("it is already running in this process")
        if (isTerminal(record.state)) return yield* refuse("it has already ended")
        if (record.state === "queued")
          return yield* refuse("it has not started yet; it starts when activated")
        const registered = yield* registry.get(record.workflowName)
        const changed = sourceProblem(record, registered)
        if (changed !== null) return yield* changed
        const token = claimToken((yield* newId("x")).slice(2))
        const claimed = yield* store
          .claim({
            runId,
            token,
            leaseMs: settings.leaseMs,
            mode: "resume",
            ...(takeoverFrom === undefined ? {} : { takeoverFrom })
          })
          .pipe(
            Effect.catchTag("ClaimRefused", (refused) =>
              refused.reason === "held"
                ? Effect.fail<RunBusy | InvalidRunState>(new RunBusy({ runId }))
                : Effect.fail(refuse(refused.message))
            )
          )
        yield* spawn(claimed, token, registered)
        return summarize(claimed, yield* now)
      })

    const checkpoints = makeCheckpoints({
      store,
      coordinator,
      // The runner that set the run waiting may not have stopped yet: the answer can be that fast.
      resume: (runId) =>
        Effect.zipRight(
          Effect.flatMap(activeRun(runId), (run) =>
            run === undefined ? Effect.void : Deferred.await(run.finished)
          ),
          resumeRun(runId, undefined)
        ),
      watchers,
      background: deps.background
    })

    const recover: EngineService["recover"] = Effect.fn("Engine.recover")(function* (sessionId) {
      yield* Effect.annotateCurrentSpan("sessionId", sessionId)
      const at = yield* now
      const runs = yield* store.listBySession(sessionId, 100)
      const here = yield* Ref.get(handles)
      const candidates = runs.filter(
        (run) =>
          run.state === "running" &&
          !here.has(run.runId) &&
          (run.claimToken === null || (run.claimExpiresAt ?? 0) <= at || ownerIsDead(run.claimToken))
      )
      const resumed: Array<RunSummary> = []
      const refused: Array<{ runId: string; reason: string }> = []
      for (const run of candidates) {
        const live = run.claimToken !== null && (run.claimExpiresAt ?? 0) > at
        const outcome = yield* Effect.either(
          resumeRun(run.runId, live ? (run.claimToken ?? undefined) : undefined)
        )
        if (outcome._tag === "Right") resumed.push(outcome.right)
        else if (outcome.left._tag === "StoreFailure") return yield* outcome.left
        else refused.push({ runId: run.runId, reason: outcome.left.message })
      }
      // Waiting runs hold no claim: their deadlines are watched and presentations resent here.
      yield* checkpoints.recover(sessionId)
      return { resumed, refused }
    })

    const status: EngineService["status"] = Effect.fn("Engine.status")(function* (runId) {
      yield* Effect.annotateCurrentSpan("runId", runId)
      const record = yield* requireRun(runId)
      const steps = yield* store.steps(runId)
      const events = yield* store.events(runId)
      const shown = events.map((event) => ({ kind: event.kind, message: event.message, at: event.at }))
      const wait = record.waitRequestId === null ? Option.none() : yield* store.waitOf(record.waitRequestId)
      return runStatus(record, steps, shown, yield* now, 0, Option.getOrNull(wait))
    })

    const list: EngineService["list"] = Effect.fn("Engine.list")(function* (sessionId, options) {
      yield* Effect.annotateCurrentSpan("sessionId", sessionId)
      const runs = yield* store.listBySession(sessionId, options?.limit ?? 20)
      const at = yield* now
      return runs.map((run) => summarize(run, at))
    })

    const active: EngineService["active"] = Effect.fn("Engine.active")(function* (sessionId) {
      yield* Effect.annotateCurrentSpan("sessionId", sessionId)
      // A run this process drives for the session is its one reservation while not ended: one
      // row instead of the session's 20 newest (the agent's cancel reads this before its abort).
      const held = [...(yield* Ref.get(handles)).values()].find((h) => h.ref.targetSessionId === sessionId)
      const mine = held === undefined ? Option.none() : yield* store.get(held.runId)
      if (Option.isSome(mine) && !isTerminal(mine.value.state))
        return Option.some(summarize(mine.value, yield* now))
      // One reservation per session: at most one such run exists, and it is among the newest.
      const runs = yield* store.listBySession(sessionId, 20)
      const at = yield* now
      return Option.map(Option.fromNullable(runs.find((run) => !isTerminal(run.state))), (run) =>
        summarize(run, at)
      )
    })

    const awaitRun: EngineService["await"] = Effect.fn("Engine.await")(function* (runId) {
      yield* Effect.annotateCurrentSpan("runId", runId)
      const run = yield* activeRun(runId)
      if (run !== undefined) yield* Deferred.await(run.finished)
      return yield* summary(runId)
    })

    const shutdown: EngineService["shutdown"] = Effect.gen(function* () {
      // Runners retrying a failed end give up now: the run is taken over after this process.
      yield* Ref.set(closing, true)
      const runs = [...(yield* Ref.get(handles)).values()]
      yield* Effect.forEach(
        runs,
        (run) =>
          Effect.zipRight(
            Deferred.succeed(run.stop, { _tag: "Park", reason: SHUTDOWN_PARK, quiet: "shutdown" }),
            Deferred.await(run.finished)
          ),
        { concurrency: "unbounded", discard: true }
      )
    }).pipe(Effect.withSpan("Engine.shutdown"))

    // Closing the engine's scope parks what still runs, before its fibers are interrupted.
    yield* Effect.addFinalizer(() => shutdown)

    return Engine.of({
      start,
      activate,
      submit: Effect.fn("Engine.submit")(function* (input) {
        yield* Effect.annotateCurrentSpan("requestId", input.requestId)
        return yield* submitRequest(store, activeRun, input)
      }),
      answer: Effect.fn("Engine.answer")(function* (input) {
        yield* Effect.annotateCurrentSpan({ requestId: input.requestId, by: input.by })
        return yield* checkpoints.answer(input)
      }),
      cancel,
      pause,
      park: Effect.fn("Engine.park")(function* (runId, reason) {
        yield* Effect.annotateCurrentSpan("runId", runId)
        return yield* signal(runId, "park", { _tag: "Park", reason, quiet: null })
      }),
      interrupt: Effect.fn("Engine.interrupt")(function* (runId, { reason, afterwards }) {
        yield* Effect.annotateCurrentSpan("runId", runId)
        return yield* signal(runId, "interrupt", { _tag: "Interrupt", reason, afterwards })
      }),
      resume,
      adopt: adopt({
        store,
        registry,
        spawn,
        resume,
        requireRun,
        activeRun,
        leaseMs: settings.leaseMs,
        presentWaits: checkpoints.recover
      }),
      recover,
      status,
      active,
      openStep: (sessionId) =>
        Effect.flatMap(Ref.get(handles), (map) => openStepFor(map.values(), sessionId)),
      list,
      await: awaitRun,
      shutdown
    })
  })

/** The engine over its ports; closing the layer parks the runs still executing. */
export const layer = (
  config: EngineConfig = {}
): Layer.Layer<Engine, never, RunStore | WorkflowRegistry | Coordinator | SourceEvents> =>
  Layer.scoped(Engine, make(config))
