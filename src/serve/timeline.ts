/**
 * The page's model, pure over what store/timeline-reads.ts read: a run's header (its condition
 * in the words every view uses), its step visits as bars (outcome, limit, deadline, note, the
 * wait it asked, its reminders), its turn intents' lives, its events and its restart chain.
 * Times are epoch milliseconds. Every text is redacted before it is clipped (`clip`), so a cut
 * never leaves a secret too short to match; routes.ts redacts each response once more.
 */
import { conditionKind, conditionLabel, runCondition } from "../domain/run-condition.ts"
import { stepDeadline, SUPERSEDED } from "../domain/step-deadline.ts"
import { redactText } from "../domain/redact.ts"
import { duration } from "../domain/text.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { clip } from "../cli/format.ts"
import type { LaunchRecord } from "../store/launch-store.ts"
import type { RunRecord, StepRecord } from "../store/run-store.ts"
import type { RunEvent } from "../store/run-events.ts"
import type { IntentCursor, Page, StepPage, WaitRow } from "../store/timeline-reads.ts"

/** The longest note, question or answer shown. */
export const MAX_TEXT = 300

/** One line: redacted, spaces collapsed, clipped. */
export const line = (text: string, max = MAX_TEXT): string =>
  clip(redactText(text).replace(/\s+/g, " ").trim(), max)

const ms = (iso: string | null): number | null => {
  const at = iso === null ? Number.NaN : Date.parse(iso)
  return Number.isFinite(at) ? at : null
}

/** `reminders`: step reminders sent for the attempt the run stands at. */
export const runView = (run: RunRecord, now: number, reminders = 0) => {
  const condition = runCondition(run, now, reminders)
  const { error, abort } = run
  return {
    id: run.runId,
    workflow: line(run.workflowName, 120),
    session: run.targetSessionId,
    state: run.state,
    condition: conditionLabel(condition),
    kind: conditionKind(condition),
    node: run.currentNodeId,
    steps: run.stepCount,
    maxSteps: run.maxSteps,
    claims: run.claims,
    created: ms(run.createdAt),
    updated: ms(run.updatedAt),
    ended: ms(run.endedAt),
    error:
      error === null
        ? null
        : line(
            `${error.message}${error.nodeId === null ? "" : ` (at ${error.nodeId})`}` +
              // The node's own error, unless the message quotes it already (compared as shown:
              // the message may be stored redacted and the original not).
              (error.original === null || redactText(error.message).includes(redactText(error.original))
                ? ""
                : `: ${error.original}`)
          ),
    end: run.end === null ? null : `${run.end.kind} (by the ${run.end.by})`,
    interruption:
      abort === null
        ? null
        : `${abort.cause}${abort.nodeId === null ? "" : ` at ${abort.nodeId}`}${run.abortPending ? " (no natural successor yet)" : ""}`
  }
}

const waitView = (wait: WaitRow) => ({
  request: wait.request_id,
  question: line(wait.prompt),
  deadline: wait.deadline_at,
  state: wait.state,
  by: wait.answered_by,
  answered: ms(wait.answered_at),
  answer: wait.state === "submitted" && wait.answer !== null ? line(wait.answer, 120) : null
})

const outcome = (step: StepRecord, wait: WaitRow | undefined): string =>
  step.outcome ??
  (step.interrupted === SUPERSEDED
    ? "superseded"
    : step.interrupted !== null
      ? "interrupted"
      : wait?.state === "open"
        ? "waiting"
        : "in flight")

const note = (step: StepRecord, wait: WaitRow | undefined): string => {
  if (step.outcome === "timed_out" && step.timeoutMs !== null)
    return `timed out after ${duration(step.timeoutMs)}`
  if (wait?.state === "open") return "waiting for an answer"
  if (wait?.answered_by != null) return `answered by the ${wait.answered_by}`
  return line(step.error ?? step.interrupted ?? "")
}

const runnerText = (runner: StepRecord["runner"]): string | null =>
  runner === null ? null : line(`${runner.host} pid ${runner.pid}`, 120)

/**
 * A page of step visits as bars; a deadline counts from the visit a takeover continued. A visit
 * whose runner differs from the visit before it (both known) was run after a takeover: another
 * process, or the same machine after a restart, claimed the run.
 */
export const stepItems = (page: StepPage) => {
  const all = [...page.before, ...page.rows]
  const waits = new Map(page.waits.map((wait) => [wait.attempt_id, wait]))
  return {
    next: page.next === null ? null : String(page.next),
    items: page.rows.map((step, i) => {
      const wait = waits.get(step.attemptId)
      const previous = all[page.before.length + i - 1]?.runner ?? null
      return {
        cursor: String(step.seq),
        final: step.endedAt !== null,
        seq: step.seq,
        node: step.nodeId,
        start: ms(step.startedAt),
        end: ms(step.endedAt),
        outcome: outcome(step, wait),
        limit: step.timeoutMs,
        deadline: stepDeadline(all, page.before.length + i),
        note: note(step, wait),
        runner: runnerText(step.runner),
        takenOver:
          previous !== null &&
          step.runner !== null &&
          (previous.host !== step.runner.host || previous.pid !== step.runner.pid),
        wait: wait === undefined ? null : waitView(wait),
        reminders: page.reminders
          .filter((r) => r.attempt_id === step.attemptId)
          .map((r) => ({ ordinal: r.ordinal, at: ms(r.created_at) }))
      }
    })
  }
}

/** Intents: created → eligible → claimed → resolved, and the message path that resolved each. */
export const intentItems = (page: Page<TurnIntent, IntentCursor>) => ({
  next: page.next === null ? null : JSON.stringify(page.next),
  items: page.rows.map((intent) => ({
    cursor: JSON.stringify([intent.requestedAt, intent.intentId]),
    final: intent.resolvedAt !== null,
    id: intent.intentId,
    cause: intent.cause,
    node: intent.nodeId,
    created: ms(intent.requestedAt),
    eligible: ms(intent.eligibleAt),
    claimedUntil: intent.resolvedAt === null ? intent.deliveryClaimExpiresAt : null,
    resolved: ms(intent.resolvedAt),
    resolution: intent.resolution,
    message: intent.resolutionMessageId === null ? null : line(intent.resolutionMessageId, 80)
  }))
})

/** Events; an adoption (the run and its claim moved to another session) said from its facts. */
export const eventItems = (page: Page<RunEvent, number>) => ({
  next: page.next === null ? null : String(page.next),
  items: page.rows.map((event) => ({
    cursor: String(event.seq),
    final: true,
    seq: event.seq,
    kind: event.kind,
    at: ms(event.at),
    text: line(
      event.adoption === null
        ? event.message
        : `moved from session ${event.adoption.fromSessionId} to ${event.adoption.toSessionId} with ${event.adoption.intents.length} pending intent(s)`
    )
  }))
})

/**
 * The restart chain (workflow_run_launches): the earlier runs the run's lineage names, root
 * first, the run, the runs that restarted it in turn, and a launch its terminal turn made.
 */
export const chainLinks = (
  runId: string,
  own: LaunchRecord | null,
  restarts: ReadonlyArray<LaunchRecord>,
  launched: LaunchRecord | null
) => {
  const earlier = own?.launch.lineage?.earlier ?? []
  const extra = launched !== null && !restarts.some((r) => r.runId === launched.runId) ? [launched] : []
  if (earlier.length + restarts.length + extra.length === 0) return []
  return [
    ...earlier.map((run, i) => ({
      id: run.runId,
      relation: i === 0 ? "root" : `restart ${i}`,
      note: line(`${run.state} (${run.reasonKind})`, 80)
    })),
    {
      id: runId,
      relation: `this run (${earlier.length === 0 ? "root" : `restart ${earlier.length}`})`,
      note: null
    },
    ...restarts.map((launch, i) => ({
      id: launch.runId,
      relation: `restart ${earlier.length + i + 1}`,
      note: null
    })),
    ...extra.map((launch) => ({
      id: launch.runId,
      relation: `launched by its terminal turn (${launch.kind})`,
      note: null
    }))
  ]
}
