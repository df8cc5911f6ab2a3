/**
 * Agent step submissions: `{action: "submit", requestId, output}` from the `workflow` tool.
 * Unknown, stale, cross-run, duplicate and invalid submissions are rejected with a clear error
 * and change nothing, and so is a request of another session's run (`ForeignRun`, the check every
 * tool action shares); an identical repeat returns the saved receipt. An accepted submission is
 * written (request answered + step `ok`) under the runner's claim and lock, then wakes the runner.
 */
import { Clock, Deferred, Effect, Option, Ref } from "effect"
import { type ForeignRun, foreignRun } from "../domain/identity.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { ClaimLost } from "../store/run-errors.ts"
import type { RequestRecord, RunStoreService, SubmitReceipt } from "../store/run-store.ts"
import type { ActiveRun } from "./active-run.ts"
import { SubmitRejected, type SubmitRejection } from "./errors.ts"
import { canonicalJson, sentJsonProblem } from "./json.ts"

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
