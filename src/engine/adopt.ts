/**
 * `Engine.adopt`: the user takes another session's run over for the current session
 * (`/workflow resume <runId>` typed there). Only a run that no live process holds is adopted: its
 * claim is absent, expired, or names an owner process on this machine that no longer exists
 * (`ownerIsDead`). The store moves the run with everything it owes the old session in the
 * claim's transaction (`RunStore.adopt`); then the runner starts here and reruns the node in
 * flight, as any takeover does, so its step prompt reaches this session. A run at a waiting
 * checkpoint moves unclaimed and keeps waiting: its question is presented in this session, which
 * then answers it.
 */
import { Clock, Effect } from "effect"
import type { RunNotFound, RunRecord, RunStoreService } from "../store/run-store.ts"
import { isTerminal } from "../store/run-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { claimToken, newId, ownerIsDead, ownerOf } from "./active-run.ts"
import type { Adopted, EngineService } from "./engine.ts"
import { InvalidRunState, RunLiveElsewhere } from "./errors.ts"
import { summarize } from "./messages.ts"
import { type RegisteredWorkflow, sourceProblem, type WorkflowRegistryService } from "./registry.ts"

export interface AdoptDeps {
  readonly store: RunStoreService
  readonly registry: WorkflowRegistryService
  readonly leaseMs: number
  /** The run's runner in this process, if one runs it here. */
  readonly activeRun: (runId: string) => Effect.Effect<unknown>
  readonly spawn: (
    record: RunRecord,
    token: string,
    registered: RegisteredWorkflow
  ) => Effect.Effect<void, StoreFailure>
  /** `Engine.resume`, for a run that is the session's own. */
  readonly resume: EngineService["resume"]
  readonly requireRun: (runId: string) => Effect.Effect<RunRecord, RunNotFound | StoreFailure>
  /** A waiting run moved here: watch its deadline, present its question in this session. */
  readonly presentWaits: (sessionId: string) => Effect.Effect<unknown, StoreFailure>
}

/** The refusal for a run that a live process holds, naming its session and process. */
const liveElsewhere = (record: RunRecord, live: "runner" | "delivery") => {
  const owner = record.claimToken === null ? null : ownerOf(record.claimToken)
  return new RunLiveElsewhere({
    runId: record.runId,
    ownerSessionId: record.targetSessionId,
    live,
    ownerHost: owner?.host ?? null,
    ownerPid: owner?.pid ?? null,
    leaseUntil:
      live === "runner" && record.claimExpiresAt !== null
        ? new Date(record.claimExpiresAt).toISOString()
        : null
  })
}

export const adopt = (deps: AdoptDeps): EngineService["adopt"] =>
  Effect.fn("Engine.adopt")(function* (runId, sessionId) {
    yield* Effect.annotateCurrentSpan({ runId, sessionId })
    const record = yield* deps.requireRun(runId)
    if (record.targetSessionId === sessionId) {
      return { run: yield* deps.resume(runId), adoption: null } satisfies Adopted
    }
    const refuse = (problem: string) =>
      new InvalidRunState({ runId, state: record.state, action: "adopt", problem })
    if (isTerminal(record.state)) {
      return yield* refuse(
        `it has already ended, and an ended run cannot be adopted (/workflow status ${runId} shows how it ended)`
      )
    }
    if (record.state === "queued") {
      return yield* refuse(
        `it has not started yet; it starts when session ${record.targetSessionId} is next idle`
      )
    }
    if ((yield* deps.activeRun(runId)) !== undefined)
      return yield* refuse("it is already running in this process")
    const now = yield* Clock.currentTimeMillis
    const live = record.claimToken !== null && (record.claimExpiresAt ?? 0) > now
    if (live && record.claimToken !== null && !ownerIsDead(record.claimToken)) {
      return yield* liveElsewhere(record, "runner")
    }
    const registered = yield* deps.registry.get(record.workflowName)
    const changed = sourceProblem(record, registered)
    if (changed !== null) return yield* changed
    const token = claimToken((yield* newId("x")).slice(2))
    const adopted = yield* deps.store
      .adopt({
        runId,
        token,
        leaseMs: deps.leaseMs,
        sessionId,
        ...(live && record.claimToken !== null ? { takeoverFrom: record.claimToken } : {})
      })
      .pipe(
        Effect.catchTag("ClaimRefused", (refused) =>
          Effect.flatMap(
            deps.requireRun(runId),
            (now): Effect.Effect<never, RunLiveElsewhere | InvalidRunState> =>
              refused.reason === "held" || refused.reason === "delivering"
                ? Effect.fail(liveElsewhere(now, refused.reason === "held" ? "runner" : "delivery"))
                : Effect.fail(
                    new InvalidRunState({
                      runId,
                      state: now.state,
                      action: "adopt",
                      problem: refused.message
                    })
                  )
          )
        )
      )
    // A waiting run is moved unclaimed: no runner until its answer, only its question here.
    if (adopted.run.waitRequestId !== null) yield* deps.presentWaits(sessionId)
    else yield* deps.spawn(adopted.run, token, registered)
    return { run: summarize(adopted.run, yield* Clock.currentTimeMillis), adoption: adopted.adoption }
  })
