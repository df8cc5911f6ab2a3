/**
 * The agent step a runner of this process is waiting on: what step reminders and the status
 * line need, read from the runner's memory (no store call). Only a visit whose prompt reached
 * the coordinator counts, and only while the runner holds its claim and nothing asked it to stop.
 */
import { Deferred, Effect, Option, Ref } from "effect"
import type { OpenStep } from "../domain/step-reminder.ts"
import type { ActiveRun } from "./active-run.ts"

export const openStepOf = (run: ActiveRun): Effect.Effect<Option.Option<OpenStep>> =>
  Effect.gen(function* () {
    if (yield* Deferred.isDone(run.stop)) return Option.none()
    const memory = yield* Ref.get(run.memory)
    const visit = memory.visit
    if (memory.claimGone || visit === null || visit.node.type !== "agent") return Option.none()
    if (visit.requestId === null || !visit.delivered) return Option.none()
    if (yield* Deferred.isDone(visit.submitted)) return Option.none()
    const limit = visit.timeoutMs
    return Option.some({
      runId: run.runId,
      workflowName: run.workflow.name,
      nodeId: visit.nodeId,
      attemptId: visit.attemptId,
      requestId: visit.requestId,
      deadline: typeof limit === "number" ? (visit.deadlineFrom ?? visit.startedAt) + limit : null
    })
  })

/** The open step of the session's run that this process drives, if any. */
export const openStepFor = (
  runs: Iterable<ActiveRun>,
  sessionId: string
): Effect.Effect<Option.Option<OpenStep>> => {
  for (const run of runs) if (run.ref.targetSessionId === sessionId) return openStepOf(run)
  return Effect.succeed(Option.none())
}
