/**
 * Interruptions and terminal events of a claimed run: record the abort's provenance and tell
 * the successor-turn core (bounded), publish the terminal event of a run that ended durably,
 * and stop on claim loss. The runner calls these under the run's lock.
 */
import { Deferred, Duration, Effect, Option, Ref, Schedule } from "effect"
import type { ActiveTurnCause, Provenance, TerminalState } from "../domain/event-policy.ts"
import { decide as policy } from "../domain/event-policy.ts"
import { intentRequest } from "../domain/event-policy.ts"
import { identify, terminalEvent } from "../interruption/run-debts.ts"
import { cancelledBy } from "../terminal/terminal-outcome.ts"
import { ABORT_LOCK_BUDGET_MS, withLockBudget } from "../store/database.ts"
import type { ClaimLost, HandoffResult, RunNotFound, RunRecord } from "../store/run-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { ActiveRun, RunnerDeps, VisitState } from "./active-run.ts"
import { ProvenanceNotStored } from "./errors.ts"

/** Longest an abort waits for its provenance write (the intent persist has its own bound). */
export const PROVENANCE_BOUND_MS = 200
/** Longest an abort waits to read whether its claim still holds (a read; normally µs). */
export const CLAIM_CHECK_MS = 50
/**
 * Longest a claim-loss abort waits for its handoff write before telling the core (one
 * conditional statement; normally µs). Past it, the write goes on beside the abort.
 */
export const HANDOFF_FIRST_MS = 50

/**
 * Record abort provenance and tell the core, which persists the intent (bounded) and aborts the
 * turn. The two run side by side, so the abort waits for neither store longer than the core's
 * persist bound, and the publish is the finalizer of the write: a failed, hung or dying write
 * never skips it. A write that did not land is left to terminal handling, which reads the
 * in-memory provenance. Claim loss has no claim to write under: its provenance goes to the run
 * unfenced (`recordHandoff`) for the new owner's terminal outcome to reuse; when the run has
 * already ended, nobody will: this runner publishes the no-successor handoff itself, unless
 * that end owes its own successor, which then answers this claim loss too.
 */
export const interrupt = Effect.fn("Runner.interrupt")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  visit: VisitState,
  requested: ActiveTurnCause,
  requestedReason: string
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, nodeId: visit.nodeId, cause: requested })
  let cause = requested
  let reason = requestedReason
  // A read never waits for another process's write lock (WAL): find out cheaply whether the
  // claim is still ours, so a turn whose run was taken over is reported as a claim loss.
  // The claim-only read first; the whole row (snapshot, step count) only when the claim is gone
  // or the cause is already a claim loss (then the row's end decides what the abort records).
  const whole = deps.store.get(run.runId)
  const read =
    cause === "claimLost"
      ? whole
      : deps.store.control(run.fence).pipe(
          Effect.as(Option.none<RunRecord>()),
          Effect.catchTag("ClaimLost", () => whole)
        )
  const claim = yield* read.pipe(
    Effect.timeout(Duration.millis(CLAIM_CHECK_MS)),
    Effect.either,
    Effect.interruptible
  )
  if (
    cause !== "claimLost" &&
    claim._tag === "Right" &&
    Option.isSome(claim.right) &&
    claim.right.value.claimToken !== run.fence.token
  ) {
    yield* Ref.update(run.memory, (m) => ({ ...m, claimLostReported: true }))
    cause = "claimLost"
    reason = "another runner took over the workflow run"
  }
  // Ended by another runner before this one learned of its loss: this abort records nothing.
  // When that end owes its own successor, the abort keeps that intent (no second one for the
  // same stop); when it owes none (the user's direct cancel), it only stops the turn.
  let ended =
    cause === "claimLost" && claim._tag === "Right" && Option.isSome(claim.right)
      ? endedEvent(claim.right.value)
      : null
  const memory = yield* Ref.get(run.memory)
  const provenance = {
    cause,
    nodeId: visit.nodeId,
    attemptId: visit.attemptId,
    interruption: memory.interruptions
  }
  yield* Ref.update(run.memory, (m) => ({
    ...m,
    interruptions: m.interruptions + 1,
    outstanding: provenance
  }))
  // Claim loss: the handoff write goes first. It is one conditional statement that also says
  // whether the run has ended since the read above; an end that landed in between and owes its
  // own successor is then kept like one the read saw, instead of the core storing a claim-loss
  // intent beside it (two fallbacks for one stop). A write that does not answer at once goes
  // on beside the abort, as every other provenance write does; so does the write after a
  // failed read (the store is in trouble: the abort waits for nothing more).
  const early =
    cause === "claimLost" && ended === null && claim._tag === "Right"
      ? yield* deps.store
          .recordHandoff(run.runId, provenance, { unlessSuperseded: true })
          .pipe(
            withLockBudget(HANDOFF_FIRST_MS),
            Effect.timeout(Duration.millis(HANDOFF_FIRST_MS)),
            Effect.option,
            Effect.map(Option.getOrNull),
            Effect.interruptible
          )
      : null
  // The new owner has already opened the request of a later step: its prompt is the session's
  // successor turn. This abort owes nothing (a claim-loss intent here would be a second
  // terminal message beside the one the run's end under the new owner owes, seed 9407), but
  // the old turn still stops: it must not go on working on a step it no longer owns.
  if (early?._tag === "Superseded") return yield* superseded(deps, run, provenance, reason)
  if (early?._tag === "Ended") ended = endedEvent(early.run)
  const write: Effect.Effect<HandoffResult | null, ClaimLost | RunNotFound | StoreFailure> =
    ended !== null
      ? Effect.succeed(null)
      : early !== null
        ? Effect.succeed(early)
        : cause === "claimLost"
          ? deps.store.recordHandoff(run.runId, provenance)
          : Effect.as(deps.store.recordInterruption(run.fence, provenance), null)
  const written = write.pipe(
    withLockBudget(ABORT_LOCK_BUDGET_MS),
    Effect.timeoutFail({
      duration: Duration.millis(PROVENANCE_BOUND_MS),
      onTimeout: () => new ProvenanceNotStored({ runId: run.runId, boundMs: PROVENANCE_BOUND_MS })
    }),
    Effect.either,
    Effect.tap((result) =>
      result._tag === "Left"
        ? Effect.logWarning(
            `workflow run ${run.runId}: abort provenance not stored; terminal handling retries`
          )
        : Effect.void
    ),
    Effect.interruptible
  )
  const publish = deps.events.publish({
    _tag: "ActiveTurnInterrupted",
    run: run.ref,
    provenance,
    reason,
    ...(ended === null ? {} : { ended })
  })
  const [recorded] = yield* Effect.all([Effect.exit(written), publish], { concurrency: 2 }).pipe(
    Effect.uninterruptible
  )
  const handoff = recorded._tag === "Success" && recorded.value._tag === "Right" ? recorded.value.right : null
  // The run ended while this (late) handoff write was on its way, with an end that owes its own
  // successor: that end's message answers this claim loss too (`coveredByEnd`), so its intent
  // is not made eligible here; reconciliation resolves it with the end's message.
  if (handoff?._tag === "Ended" && owedEnd(handoff.run) !== null) {
    yield* Effect.logInfo(`workflow run ${run.runId}: claim lost after the run ended; its end's turn answers`)
  } else if (handoff?._tag === "Ended") {
    // The run ended with no successor of its own: the end state, never "may continue". The
    // policy gives an end the user cancelled no turn at all (its intent stays retired).
    const result = yield* deps.events.publish({
      _tag: "HandoffEnded",
      run: run.ref,
      provenance,
      observedState: handoff.run.state,
      reason,
      ...(handoff.run.state === "cancelled" ? { cancelledBy: cancelledBy(handoff.run) ?? "user" } : {})
    })
    yield* recordLoss(deps, run, result.warning)
  }
  return provenance
})

/**
 * Claim loss after the new owner's newer prompt: nothing to record and no intent (that prompt
 * is the successor), but the old turn is stopped (`AbortOnly`).
 */
const superseded = (
  deps: RunnerDeps,
  run: ActiveRun,
  provenance: Provenance & { readonly cause: ActiveTurnCause },
  reason: string
) =>
  Effect.as(
    deps.events
      .publish({ _tag: "ActiveTurnInterrupted", run: run.ref, provenance, reason, superseded: true })
      .pipe(
        Effect.zipLeft(
          Effect.logInfo(
            `workflow run ${run.runId}: claim lost after the new owner's newer prompt; turn stopped`
          )
        ),
        Effect.uninterruptible
      ),
    null
  )

/** The terminal event of an ended run (null while it runs). */
const endedEvent = (record: RunRecord) => terminalEvent(record, null)

/** The terminal event of an ended run whose end owes a successor turn of its own, else null. */
const owedEnd = (record: RunRecord) => {
  const event = endedEvent(record)
  return event !== null && policy(event)._tag === "Intent" ? event : null
}

/** The successor-turn guarantee was lost for an event: keep that fact on the run (status shows it). */
const recordLoss = (deps: RunnerDeps, run: ActiveRun, warning: string | null) =>
  warning === null
    ? Effect.void
    : deps.background(
        deps.store.recordEvent(run.runId, { kind: "guaranteeLost", message: warning }).pipe(
          Effect.retry({ schedule: Schedule.exponential(Duration.millis(200)), times: 6 }),
          Effect.catchAll((error) =>
            Effect.logError(`workflow run ${run.runId}: guarantee loss not recorded: ${error.message}`)
          )
        )
      )

/**
 * The run ended durably: publish its terminal event, which stores the run's terminal turn
 * intent. The abort it reuses is the one on the ended row (it may be another runner's, recorded
 * on claim loss): the runner's end carries its own outstanding abort into that same write
 * (`withRunnerSettle`), and the store leaves it off when a prompt already answered it
 * (`clearAnsweredAbort`, `store/run-writes-sql.ts`), so the row, not memory, says what the end
 * reuses. Returns the intent's ID (null when the end owes no turn).
 */
export const terminal = Effect.fn("Runner.terminal")(function* (
  deps: RunnerDeps,
  run: ActiveRun,
  ended: RunRecord,
  state: TerminalState,
  reason: string
) {
  yield* Effect.annotateCurrentSpan({ runId: run.runId, state })
  const event = terminalEvent(ended, reason)
  if (event === null || event.state !== state) return null
  // An end that owes no turn (the user's direct cancel, even with a system abort still
  // outstanding): nothing to publish; the runner published `Quiet` for it.
  if (policy(event)._tag !== "Intent") return null
  const result = yield* deps.events.publish(event)
  yield* recordLoss(deps, run, result.warning)
  // The deterministic ID, also when the publisher only records events.
  const request = intentRequest(event, policy(event))
  if (request === null) return null
  return yield* identify(request).pipe(
    Effect.map((identified) => identified.intentId),
    Effect.orElseSucceed(() => result.intentId)
  )
})

/**
 * The agent cancelled the run while no agent turn of it was open (a compute step, between steps,
 * or a run parked and resumed before the cancel was applied): no turn to abort, but the run's end
 * owes its terminal turn, as when the agent cancels a run no runner holds. The provenance goes on
 * the row first, so a crash before the end leaves it for the next owner's cancel and
 * reconciliation; an abort still outstanding is kept and reused (one interruption, one intent).
 */
export const recordAgentCancel = (
  deps: RunnerDeps,
  run: ActiveRun,
  at: { readonly nodeId: string | null; readonly attemptId: string | null }
) =>
  Effect.gen(function* () {
    const memory = yield* Ref.get(run.memory)
    if (memory.outstanding !== null) return
    const provenance = {
      cause: "agentCancelled" as const,
      nodeId: at.nodeId,
      attemptId: at.attemptId,
      interruption: memory.interruptions
    }
    yield* deps.store.recordInterruption(run.fence, provenance)
    yield* Ref.update(run.memory, (m) => ({
      ...m,
      interruptions: m.interruptions + 1,
      outstanding: provenance
    }))
  })

/** Claim loss: if a turn is working on our request it must stop (handoff provenance). No terminal event. */
export const onClaimLost = (deps: RunnerDeps, run: ActiveRun) =>
  Effect.gen(function* () {
    const memory = yield* Ref.get(run.memory)
    if (memory.claimLostReported) return null
    yield* Ref.update(run.memory, (m) => ({ ...m, claimLostReported: true }))
    const visit = memory.visit
    // A turn this runner already aborted for this visit is not aborted twice.
    const aborted = memory.outstanding !== null && memory.outstanding.attemptId === visit?.attemptId
    if (visit?.delivered && !aborted && !(yield* Deferred.isDone(visit.submitted))) {
      yield* interrupt(deps, run, visit, "claimLost", "another runner took over the workflow run")
    }
    yield* Effect.logInfo(`workflow run ${run.runId}: claim lost; this runner stopped`)
    return null
  })
