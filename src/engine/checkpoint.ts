/**
 * Waiting checkpoints: a `wait` node asks a question and the run waits for its answer without a
 * runner. The runner opens the request and sets the run `waiting` (claim released) in one fenced
 * write, then the waiting presentation goes out through the Coordinator as a natural message of
 * the run: when the run owes a successor turn (a step timed out and its route led here), that
 * presentation claims and resolves the pending intent, so the model gets one message, never also
 * a fallback. The presentation is rebuilt from the stored prompt and sent `once`: a restarted
 * process sends it again only when the branch lacks it.
 *
 * The first answer (the model's `workflow answer` or the user's `/workflow answer`) or the passing
 * of the wait's deadline settles the node's step in one store transaction; the process that won
 * then claims the run and the runner routes from the settled step (`{ answer }`, or `timed_out`).
 */
import { Clock, Effect, FiberMap, Option } from "effect"
import { PRESENTATION_SCHEMA, PRESENTATION_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints, duration } from "../domain/text.ts"
import type { CoordinatorService } from "../delivery/coordinator.ts"
import { foreignRun, type ForeignRun } from "../domain/identity.ts"
import type { CustomMessage } from "../session/pi-session.ts"
import type { ClaimLost, RunStoreService, SubmitReceipt } from "../store/run-store.ts"
import { type AnsweredBy, MAX_WAIT_PROMPT_CHARS, type WaitRecord } from "../store/run-waits.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { type ActiveRun, newId, type RunnerDeps, type VisitState, type Waiting } from "./active-run.ts"
import { AnswerRejected, type AnswerRejection } from "./errors.ts"
import { DELIVERY } from "./messages.ts"
import { sentJsonProblem } from "./validate.ts"

/** The waiting presentation: the question and the exact call that answers it. */
export const waitingMessage = (wait: WaitRecord, workflowName: string): CustomMessage => ({
  customType: PRESENTATION_TYPE,
  display: true,
  content: [
    wait.prompt,
    "",
    "---",
    `Workflow "${workflowName}" (run ${wait.runId}) is waiting at "${wait.nodeId}" for an answer` +
      `${wait.deadlineAt === null ? "" : ` until ${new Date(wait.deadlineAt).toISOString()}`}.`,
    'Answer with the `workflow` tool: {"action": "answer", ' +
      `"requestId": "${wait.requestId}", "answer": <your answer as JSON>}, ` +
      `or the user types: /workflow answer ${wait.runId} <text>.`
  ].join("\n"),
  details: {
    schema: PRESENTATION_SCHEMA,
    runId: wait.runId,
    state: "waiting",
    nodeId: wait.nodeId,
    attemptId: wait.attemptId,
    requestId: wait.requestId,
    workflowName,
    deadlineAt: wait.deadlineAt
  }
})

/** The runner's side: store the question (redacted, bounded), open the request, set the run waiting. */
export const enterWait = (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState,
  question: string,
  limit: { readonly timeoutMs: number | null; readonly deadlineAt: number | null }
): Effect.Effect<WaitRecord, ClaimLost | StoreFailure> =>
  Effect.gen(function* () {
    // Redacted before it is stored: the CLI, the status and every resend read this text.
    const prompt = clipCodePoints(redactText(question), MAX_WAIT_PROMPT_CHARS, " …[truncated]")
    const requestId = yield* newId("req")
    const input = { nodeId: visit.nodeId, attemptId: visit.attemptId, requestId, prompt, ...limit }
    return yield* deps.store.wait(run.fence, input)
  })

/**
 * Whether the question is still open, asked right before the presentation is sent: one answered
 * while the delivery waited for idle is not asked after its answer. A store that cannot say
 * leaves it wanted (a late question beats a lost one).
 */
const stillOpen = (store: RunStoreService, requestId: string): Effect.Effect<boolean> =>
  store.waitOf(requestId).pipe(
    Effect.map((wait) => Option.isSome(wait) && wait.value.state === "open"),
    Effect.orElseSucceed(() => true)
  )

/** Send the waiting presentation (never twice into one branch, never once answered); a failure is logged. */
export const presentWaiting = (
  coordinator: CoordinatorService,
  store: RunStoreService,
  waiting: Waiting
): Effect.Effect<void> =>
  coordinator
    .deliverNatural({
      kind: "presentation",
      runId: waiting.wait.runId,
      message: waitingMessage(waiting.wait, waiting.workflowName),
      options: DELIVERY,
      once: true,
      stillWanted: stillOpen(store, waiting.wait.requestId),
      ...(waiting.answers === undefined ? {} : { answers: waiting.answers })
    })
    .pipe(
      Effect.asVoid,
      Effect.catchAllCause((cause) =>
        Effect.logWarning(
          `workflow run ${waiting.wait.runId}: waiting presentation not delivered; it is sent again at the next session start`,
          cause
        )
      ),
      Effect.withSpan("Runner.presentWaiting", { attributes: { runId: waiting.wait.runId } })
    )

/** The step error of a wait whose limit passed. */
export const waitTimedOut = (wait: WaitRecord): string =>
  `timed out after ${duration(wait.timeoutMs ?? (wait.deadlineAt ?? 0) - Date.parse(wait.since))}`

export interface AnswerInput {
  /** The Pi session the answer came from (the tool's or the command's). */
  readonly sessionId: string
  readonly requestId: string
  readonly answer: unknown
  readonly by: AnsweredBy
  /** Optional: when given, the request must belong to this run. */
  readonly runId?: string
}

const reject = (requestId: string, reason: AnswerRejection, detail: string) =>
  Effect.fail(new AnswerRejected({ requestId, reason, detail }))

const notOpen = (wait: WaitRecord) =>
  wait.state === "submitted"
    ? reject(
        wait.requestId,
        "answered",
        `it was already answered${wait.answeredBy === null ? "" : ` by the ${wait.answeredBy}`}; the first answer counts`
      )
    : reject(
        wait.requestId,
        "closed",
        wait.state === "closed"
          ? `the run no longer waits for it (${wait.closedReason ?? "closed"})`
          : "the run no longer waits for it"
      )

/**
 * Record the first answer to a waiting checkpoint. Refused with nothing changed: an unknown or
 * malformed request ID, an agent step's request (`submit` answers those), another run's, another
 * session's (`ForeignRun`), an answer that is not JSON within bounds, and any answer after the
 * first or after the wait ended. The winner's receipt is returned; the caller resumes the run.
 */
export const recordAnswer = (
  store: RunStoreService,
  input: AnswerInput
): Effect.Effect<
  { readonly receipt: SubmitReceipt; readonly wait: WaitRecord },
  AnswerRejected | ForeignRun | StoreFailure
> =>
  Effect.gen(function* () {
    const { requestId } = input
    if (typeof requestId !== "string" || requestId.length === 0 || requestId.length > 512)
      return yield* reject(String(requestId).slice(0, 512), "unknown", "requestId must be a non-empty string")
    const found = yield* store.waitOf(requestId)
    if (Option.isNone(found)) {
      const request = yield* store.request(requestId)
      return yield* Option.isSome(request)
        ? reject(requestId, "notWait", "this request is an agent step's; answer it with submit")
        : reject(requestId, "unknown", "no waiting checkpoint has this request ID")
    }
    const wait = found.value
    if (input.runId !== undefined && input.runId !== wait.runId)
      return yield* reject(
        requestId,
        "crossRun",
        `the request belongs to run ${wait.runId}, not ${input.runId}`
      )
    const run = yield* store.get(wait.runId)
    if (Option.isSome(run)) {
      const foreign = foreignRun(run.value, input.sessionId, "answer")
      if (foreign !== null) return yield* foreign
    }
    if (wait.state !== "open") return yield* notOpen(wait)
    const problem = sentJsonProblem(input.answer, "answer")
    if (problem !== null) return yield* reject(requestId, "invalidAnswer", problem)
    const receipt: SubmitReceipt = {
      schema: "pi-workflows.submit-receipt.v1",
      runId: wait.runId,
      requestId,
      nodeId: wait.nodeId,
      attemptId: wait.attemptId,
      acceptedAt: new Date(yield* Clock.currentTimeMillis).toISOString()
    }
    const result = yield* store.answerWait({ requestId, answer: input.answer, receipt, by: input.by })
    if (result._tag === "NotOpen") return yield* notOpen(result.wait)
    return { receipt, wait: result.wait }
  })

export interface CheckpointEnv {
  readonly store: RunStoreService
  readonly coordinator: CoordinatorService
  /** Claim the run here and run it on (the engine's resume); a refusal means someone else did. */
  readonly resume: (runId: string) => Effect.Effect<unknown, unknown>
  /** One deadline watcher per wait, in the engine's scope. */
  readonly watchers: FiberMap.FiberMap<string>
  readonly background: (effect: Effect.Effect<void>) => Effect.Effect<void>
}

/** The engine's side of waiting checkpoints: presentations, deadline watchers, answers. */
export const makeCheckpoints = (env: CheckpointEnv) => {
  /** Claim the run that an answer or its deadline settled; another process may have claimed it. */
  const resumeAfter = (runId: string) =>
    env
      .resume(runId)
      .pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning(
            `workflow run ${runId}: not resumed here after its wait (a later resume takes it)`,
            cause
          )
        )
      )

  /** Time the wait out when its deadline passes (on the engine's clock), unless it was answered. */
  const watch = (wait: WaitRecord): Effect.Effect<void> => {
    const deadlineAt = wait.deadlineAt
    if (deadlineAt === null) return Effect.void
    const expire = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (deadlineAt > now) yield* Effect.sleep(deadlineAt - now)
      const expired = yield* env.store.expireWait({ requestId: wait.requestId, error: waitTimedOut(wait) })
      presented.delete(wait.requestId)
      if (Option.isSome(expired)) yield* resumeAfter(wait.runId)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning(`workflow run ${wait.runId}: the wait's deadline was not applied`, cause)
      )
    )
    return Effect.asVoid(FiberMap.run(env.watchers, wait.requestId, expire, { onlyIfMissing: true }))
  }

  // Requests this process has presented (or is presenting): `recover` runs on every maintenance
  // pass, and a copy still on its way (a follow-up Pi writes when the turn ends) is not yet in the
  // branch that the `once` check reads, so without this each pass would queue another copy.
  const presented = new Set<string>()

  const onWait = (waiting: Waiting): Effect.Effect<void> =>
    Effect.zipRight(
      watch(waiting.wait),
      Effect.suspend(() => {
        if (presented.has(waiting.wait.requestId)) return Effect.void
        presented.add(waiting.wait.requestId)
        return env.background(presentWaiting(env.coordinator, env.store, waiting))
      })
    )

  const answer = (input: AnswerInput) =>
    Effect.gen(function* () {
      const answered = yield* recordAnswer(env.store, input)
      presented.delete(answered.wait.requestId)
      yield* FiberMap.remove(env.watchers, answered.wait.requestId)
      yield* resumeAfter(answered.wait.runId)
      return answered.receipt
    })

  /**
   * At session start and on each maintenance pass: every open wait of the session is watched, its
   * presentation sent `once`, and only when this process has not presented it already.
   */
  const recover = (sessionId: string): Effect.Effect<number, StoreFailure> =>
    Effect.gen(function* () {
      const open = yield* env.store.waits({ sessionId, open: true })
      for (const wait of open) {
        const run = yield* env.store.get(wait.runId)
        if (Option.isNone(run) || run.value.waitRequestId !== wait.requestId) continue
        yield* onWait({ wait, workflowName: run.value.workflowName, answers: undefined })
      }
      return open.length
    })

  return { onWait, answer, recover }
}
