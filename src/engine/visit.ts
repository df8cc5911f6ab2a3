/**
 * One node visit: resolve its timeout, run the compute function or send the agent prompt and
 * wait for the submission, all raced against the run's stop signal. Stopping, parking, timing
 * out or losing the claim aborts the context's AbortSignal. The only durable writes here are
 * the step's resolved limit, the request row and the "natural successor sent" mark; settling is
 * the runner's job.
 *
 * And the submission that answers an agent visit: `{action: "submit", requestId, output}` from
 * the `workflow` tool. Unknown, stale, cross-run, duplicate and invalid submissions are rejected
 * with a clear error and change nothing, and so is a request of another session's run
 * (`ForeignRun`, the check every tool action shares); an identical repeat returns the saved
 * receipt. An accepted submission is written (request answered + step `ok`) under the runner's
 * claim and lock, then wakes the runner.
 */
import { Cause, Clock, Deferred, Effect, Either, Option, Ref, Runtime } from "effect"
import { boundReason } from "../domain/facts.ts"
import { type ForeignRun, foreignRun } from "../domain/identity.ts"
import { abortIntentId } from "../interruption/run-debts.ts"
import { progressProblem } from "../notifications/notifier.ts"
import type { ClaimLost, RequestRecord, RunStoreService, SubmitReceipt } from "../store/run-store.ts"
import type { WaitRecord } from "../store/run-waits.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { type ActiveRun, newId, type RunnerDeps, type StopRequest, type VisitState } from "./active-run.ts"
import type { StepContext } from "./definition.ts"
import { enterWait } from "./checkpoint.ts"
import { SubmitRejected, type SubmitRejection } from "./errors.ts"
import { agentStepMessage, DELIVERY } from "./messages.ts"
import { remainingMs, resolveTimeout, sleepMillis } from "./timeout.ts"
import { canonicalJson, jsonProblem, type LoadedNode, sentJsonProblem } from "./validate.ts"

export type VisitResult =
  | { readonly _tag: "Ok"; readonly output: unknown }
  | { readonly _tag: "Failed"; readonly error: string }
  | { readonly _tag: "TimedOut"; readonly timeoutMs: number }
  | { readonly _tag: "Stopped"; readonly stop: StopRequest }
  /** A wait node: the run now waits (no claim) for this checkpoint's answer. */
  | { readonly _tag: "Waiting"; readonly wait: WaitRecord }

const ok = (output: unknown): VisitResult => ({ _tag: "Ok", output })
const failed = (error: string): VisitResult => ({ _tag: "Failed", error: boundReason(error) })

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function"

const messageOf = (error: unknown): string => {
  if (error instanceof Error) return error.message.length > 0 ? error.message : error.name
  if (typeof error === "object" && error !== null && "message" in error) return String(error.message)
  return String(error)
}

const describeCause = (cause: Cause.Cause<unknown>) => messageOf(Cause.squash(cause))

/** Update the visit in memory only if it is still the one in flight. */
export const updateVisit = (run: ActiveRun, attemptId: string, f: (visit: VisitState) => VisitState) =>
  Ref.update(run.memory, (memory) =>
    memory.visit?.attemptId === attemptId ? { ...memory, visit: f(memory.visit) } : memory
  )

const compute = (node: Extract<LoadedNode, { type: "compute" }>, context: StepContext) =>
  Effect.suspend(() => {
    const value = node.run(context)
    // A returned Effect must be self-contained; a missing service surfaces as a failed visit.
    if (Effect.isEffect(value)) return value as Effect.Effect<unknown, unknown>
    if (isPromiseLike(value)) return Effect.tryPromise({ try: () => Promise.resolve(value), catch: (e) => e })
    return Effect.succeed(value)
  }).pipe(
    Effect.map((output) => {
      const problem = jsonProblem(output, "output")
      return problem === null
        ? ok(output)
        : failed(`compute node "${node.id}" returned non-JSON data: ${problem}`)
    }),
    Effect.catchAllCause((cause) => Effect.succeed(failed(describeCause(cause))))
  )

/** The text of an agent step's prompt or a wait node's question (a string, or its function's result). */
const promptText = (node: Extract<LoadedNode, { type: "agent" | "wait" }>, context: StepContext) =>
  Effect.suspend(() => {
    const value = typeof node.prompt === "string" ? node.prompt : node.prompt(context)
    return isPromiseLike(value)
      ? Effect.tryPromise({ try: () => Promise.resolve(value), catch: (e) => e })
      : Effect.succeed(value)
  }).pipe(
    Effect.flatMap((text) =>
      typeof text === "string" && text.trim().length > 0
        ? Effect.succeed(text)
        : Effect.fail(`the prompt function of node "${node.id}" returned no text`)
    ),
    Effect.catchAllCause((cause) => Effect.fail(`building the prompt failed: ${describeCause(cause)}`)),
    Effect.either
  )

/**
 * A natural successor reached the coordinator: the pending abort no longer needs a terminal
 * event. Memory forgets it at once (the prompt in the branch answers it); until the clear lands
 * on the row, the run's end clears it there (`answered`), so no end reuses it.
 */
const markSuccessorSent = (deps: RunnerDeps, run: ActiveRun) =>
  Effect.gen(function* () {
    const memory = yield* Ref.get(run.memory)
    if (memory.outstanding === null) return
    const answered = memory.outstanding
    yield* Ref.update(run.memory, (m) => ({ ...m, outstanding: null, answered }))
    // A failed clear must not stop the runner: the prompt is out, and a stopped runner's memory
    // (which knows the abort is answered) is lost, so the next owner would take the row's abort
    // as outstanding and its end would reuse the intent the prompt resolved (seed 9779).
    const cleared = yield* deps.store.clearInterruption(run.fence).pipe(
      Effect.as(true),
      Effect.catchTag("StoreFailure", (error) =>
        Effect.as(
          Effect.logWarning(
            `workflow run ${run.runId}: the answered abort stays on the row until the run's end: ${error.message}`
          ),
          false
        )
      )
    )
    if (cleared)
      yield* Ref.update(run.memory, (m) => (m.answered === answered ? { ...m, answered: null } : m))
  })

/**
 * The intent of the abort this prompt answers (the runner's outstanding one), so the prompt can
 * carry its identity even when the intent store cannot be read at send time.
 */
export const answeredIntent = (run: ActiveRun) =>
  Effect.flatMap(Ref.get(run.memory), ({ outstanding }) =>
    outstanding === null
      ? Effect.succeed(undefined)
      : abortIntentId(run.ref, outstanding).pipe(Effect.orElseSucceed(() => undefined))
  )

const agent = (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState,
  node: Extract<LoadedNode, { type: "agent" }>,
  context: StepContext
): Effect.Effect<VisitResult, ClaimLost | StoreFailure> =>
  Effect.gen(function* () {
    const prompt = yield* promptText(node, context)
    if (Either.isLeft(prompt)) return failed(prompt.left)
    const requestId = yield* newId("req")
    const ids = { nodeId: visit.nodeId, attemptId: visit.attemptId, requestId }
    yield* deps.store.openRequest(run.fence, ids)
    yield* updateVisit(run, visit.attemptId, (v) => ({ ...v, requestId }))
    const message = agentStepMessage({
      ...ids,
      workflowName: run.workflow.name,
      runId: run.runId,
      prompt: prompt.right
    })
    const answers = yield* answeredIntent(run)
    const sent = yield* deps.coordinator
      .deliverNatural({
        kind: "workflowPrompt",
        runId: run.runId,
        message,
        options: DELIVERY,
        ...(answers === undefined ? {} : { answers })
      })
      .pipe(Effect.either)
    if (Either.isLeft(sent)) return failed(`the prompt could not be delivered: ${sent.left.message}`)
    yield* updateVisit(run, visit.attemptId, (v) => ({ ...v, delivered: true }))
    yield* markSuccessorSent(deps, run)
    return ok(yield* Deferred.await(visit.submitted))
  })

/**
 * `ctx.progress` for one visit: bad text throws at the caller (an author's bug, like any other
 * throw in a node); a refused or failed store is logged, so an unawaited call cannot reject.
 */
const progressReporter = (deps: RunnerDeps, run: ActiveRun, visit: VisitState) =>
  Effect.map(Effect.runtime<never>(), (runtime) => (text: string): Promise<void> => {
    const problem = progressProblem(text)
    if (problem !== null) throw new TypeError(`ctx.progress: ${problem}`)
    if (Option.isNone(deps.progress)) return Promise.resolve()
    const report = deps.progress.value
      .report({ runId: run.runId, nodeId: visit.nodeId, attemptId: visit.attemptId, text })
      .pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning(`workflow run ${run.runId}: progress report not stored`, cause)
        )
      )
    return Runtime.runPromise(runtime)(report)
  })

/**
 * The resolved limit on the step row at once, so every view shows the step's limit and deadline
 * while it is in flight (the outcome write records it again). Only for display: a store failure
 * is logged and the visit goes on; a lost claim stops the runner as any fenced write does.
 */
const recordLimit = (deps: RunnerDeps, run: ActiveRun, visit: VisitState, timeoutMs: number | null) =>
  timeoutMs === null
    ? Effect.void
    : deps.store
        .recordLimit(run.fence, { attemptId: visit.attemptId, timeoutMs })
        .pipe(
          Effect.catchTag("StoreFailure", (error) =>
            Effect.logWarning(
              `workflow run ${run.runId}: the step's limit is not on its row yet: ${error.message}`
            )
          )
        )

const runNode = (deps: RunnerDeps, run: ActiveRun, visit: VisitState) =>
  Effect.suspend(() => {
    const controller = new AbortController()
    const abort = (why: string) => Effect.sync(() => controller.abort(new Error(why)))
    return Effect.gen(function* () {
      const memory = yield* Ref.get(run.memory)
      const context: StepContext = {
        input: run.input,
        outputs: memory.outputs,
        results: memory.results,
        history: memory.history,
        signal: controller.signal,
        progress: yield* progressReporter(deps, run, visit)
      }
      const limit = yield* resolveTimeout(visit.node.timeout, context, deps.settings.defaultTimeoutMs).pipe(
        Effect.either
      )
      if (Either.isLeft(limit)) return failed(limit.left.message)
      const timeoutMs = limit.right
      yield* updateVisit(run, visit.attemptId, (v) => ({ ...v, timeoutMs }))
      yield* recordLimit(deps, run, visit, timeoutMs)
      const now = yield* Clock.currentTimeMillis
      const left = timeoutMs === null ? null : remainingMs(timeoutMs, visit.deadlineFrom, now)
      const timedOut: VisitResult = { _tag: "TimedOut", timeoutMs: timeoutMs ?? 0 }
      // A taken-over visit whose deadline has passed times out at once, without a new prompt.
      if (left === 0) return timedOut
      if (visit.node.type === "wait") {
        // Not raced against its limit here: the run waits without a runner (checkpoint.ts).
        const deadlineAt = left === null ? null : now + left
        const question = yield* promptText(visit.node, context)
        if (Either.isLeft(question)) return failed(question.left)
        const wait = yield* enterWait(deps, run, visit, question.right, { timeoutMs, deadlineAt })
        return { _tag: "Waiting", wait } as const
      }
      const work =
        visit.node.type === "compute"
          ? compute(visit.node, context)
          : agent(deps, run, visit, visit.node, context)
      if (left === null) return yield* work
      const expiry = Effect.as(sleepMillis(left), timedOut)
      const result = yield* Effect.raceFirst(work, expiry)
      if (result._tag === "TimedOut") yield* abort(`node "${visit.nodeId}" timed out`)
      return result
    }).pipe(Effect.onInterrupt(() => abort(`node "${visit.nodeId}" was stopped`)))
  })

/** Run the visit until it ends or the run is told to stop, whichever comes first. */
export const executeVisit = Effect.fn("Runner.visit")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, nodeId: visit.nodeId, attemptId: visit.attemptId })
  const stopped = Effect.map(Deferred.await(run.stop), (stop): VisitResult => ({ _tag: "Stopped", stop }))
  const result: VisitResult = yield* Effect.raceFirst(stopped, runNode(deps, run, visit))
  return result
})

export interface SubmitInput {
  /** The Pi session the tool call came from. */
  readonly sessionId: string
  readonly requestId: string
  readonly output: unknown
  /** Optional: when given, the request must belong to this run. */
  readonly runId?: string
}

const reject = (requestId: string, reason: SubmitRejection, detail: string) =>
  Effect.fail(new SubmitRejected({ requestId, reason, detail }))

/** A request already answered: the same output gets the saved receipt, another one is refused. */
const repeat = (request: RequestRecord, output: unknown): Effect.Effect<SubmitReceipt, SubmitRejected> => {
  const saved = Option.getOrUndefined(request.output)
  return request.receipt !== null && canonicalJson(saved) === canonicalJson(output)
    ? Effect.succeed(request.receipt)
    : reject(request.requestId, "duplicate", "this request was already answered with a different output")
}

const closedDetail = (request: RequestRecord) =>
  `this request is no longer open (${request.closedReason ?? "closed"}); only the latest prompt of a running step accepts output`

export const submit = (
  store: RunStoreService,
  activeRun: (runId: string) => Effect.Effect<ActiveRun | undefined>,
  input: SubmitInput
): Effect.Effect<SubmitReceipt, SubmitRejected | ForeignRun | ClaimLost | StoreFailure> =>
  Effect.gen(function* () {
    const { requestId, output } = input
    if (typeof requestId !== "string" || requestId.length === 0 || requestId.length > 512) {
      return yield* reject(String(requestId), "unknown", "requestId must be a non-empty string")
    }
    const found = yield* store.request(requestId)
    if (Option.isNone(found))
      return yield* reject(requestId, "unknown", "no workflow step has this request ID")
    const request = found.value
    if (input.runId !== undefined && input.runId !== request.runId) {
      return yield* reject(
        requestId,
        "crossRun",
        `the request belongs to run ${request.runId}, not ${input.runId}`
      )
    }
    const owner = yield* store.get(request.runId)
    if (Option.isNone(owner)) return yield* reject(requestId, "unknown", "the request's run no longer exists")
    const foreign = foreignRun(owner.value, input.sessionId, "submit")
    if (foreign !== null) return yield* foreign
    if (owner.value.waitRequestId === requestId || Option.isSome(yield* store.waitOf(requestId)))
      return yield* reject(
        requestId,
        "waitRequest",
        'this request is a waiting checkpoint\'s; answer it with {"action": "answer", "requestId": …, "answer": …}'
      )
    if (request.state === "submitted") return yield* repeat(request, output)
    if (request.state === "closed") return yield* reject(requestId, "stale", closedDetail(request))
    const run = yield* activeRun(request.runId)
    if (run === undefined) {
      return yield* reject(
        requestId,
        "notActive",
        `run ${request.runId} is not running in this process; resume it, then answer its new prompt`
      )
    }
    return yield* run.lock.withPermits(1)(
      Effect.gen(function* () {
        const visit = (yield* Ref.get(run.memory)).visit
        if (visit === null || visit.requestId !== requestId || (yield* Deferred.isDone(visit.submitted))) {
          // The runner settled the visit while we waited for the lock.
          const latest = yield* store.request(requestId)
          if (Option.isSome(latest) && latest.value.state === "submitted")
            return yield* repeat(latest.value, output)
          return yield* reject(
            requestId,
            "stale",
            Option.match(latest, {
              onNone: () => "this request is no longer open",
              onSome: closedDetail
            })
          )
        }
        const problem =
          sentJsonProblem(output, "output") ??
          (visit.node.type === "agent" && visit.node.output !== null ? visit.node.output(output) : null)
        if (problem !== null) return yield* reject(requestId, "invalidOutput", problem)
        const receipt: SubmitReceipt = {
          schema: "pi-workflows.submit-receipt.v1",
          runId: run.runId,
          requestId,
          nodeId: visit.nodeId,
          attemptId: visit.attemptId,
          acceptedAt: new Date(yield* Clock.currentTimeMillis).toISOString()
        }
        yield* store
          .submit(run.fence, { requestId, output, receipt, timeoutMs: visit.timeoutMs ?? null })
          .pipe(
            Effect.tapErrorTag("ClaimLost", () => Deferred.succeed(run.stop, { _tag: "ClaimLost" })),
            Effect.catchTag("RequestNotOpen", () =>
              reject(requestId, "stale", "this request is no longer open")
            )
          )
        yield* Deferred.succeed(visit.submitted, output)
        return receipt
      })
    )
  })
