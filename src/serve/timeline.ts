/**
 * The `serve` page's model, pure over the rows `store/timeline-reads.ts` returns: a run's header
 * (its condition in the words every view uses), its step visits as bars (start, end, outcome,
 * limit, deadline, note, the wait it asked and the reminders it got), its turn intents' lives,
 * its events and its restart chain. Times are epoch milliseconds for the page to place. Every
 * text is redacted, then clipped (`clip`), so a cut never leaves a secret too short to match;
 * the server redacts the whole response once more.
 */
import { Option, Schema } from "effect"
import { conditionKind, conditionLabel, runCondition } from "../domain/run-condition.ts"
import { stepDeadline, SUPERSEDED } from "../domain/step-deadline.ts"
import { redactText } from "../domain/redact.ts"
import { duration } from "../domain/text.ts"
import { clip } from "../cli/format.ts"
import type { LaunchRecord } from "../store/launch-store.ts"
import { RunError } from "../store/run-store.ts"
import type {
  EventRow,
  IntentCursor,
  IntentRow,
  Page,
  RunSummary,
  StepPage,
  StepRow,
  WaitRow
} from "../store/timeline-reads.ts"

/** The longest note, question or answer shown. */
export const MAX_TEXT = 300

/** One line: redacted, spaces collapsed, clipped. */
export const line = (text: string, max = MAX_TEXT): string =>
  clip(redactText(text).replace(/\s+/g, " ").trim(), max)

const ms = (iso: string | null): number | null => {
  if (iso === null) return null
  const at = Date.parse(iso)
  return Number.isFinite(at) ? at : null
}

const decodeError = Schema.decodeUnknownOption(Schema.parseJson(RunError))

/** A run's error as one line: its message, node and the node's own error (raw text if it was cut). */
const errorLine = (text: string | null): string | null =>
  text === null
    ? null
    : line(
        Option.match(decodeError(text), {
          onNone: () => text,
          onSome: (e) =>
            `${e.message}${e.nodeId === null ? "" : ` (at ${e.nodeId})`}${e.original === null ? "" : `: ${e.original}`}`
        })
      )

export interface RunView {
  readonly id: string
  readonly workflow: string
  readonly session: string
  readonly state: string
  readonly condition: string
  readonly kind: string
  readonly node: string | null
  readonly steps: number
  readonly maxSteps: number
  readonly claims: number
  readonly created: number | null
  readonly updated: number | null
  readonly started: number | null
  readonly ended: number | null
  readonly error: string | null
  readonly end: string | null
  readonly interruption: string | null
}

export const runView = (run: RunSummary, now: number): RunView => {
  const condition = runCondition(
    {
      state: run.state,
      parkedReason: run.parked_reason,
      pauseRequested: run.pause_requested === 1,
      cancelRequested: run.cancel_requested,
      claimToken: run.claim_token,
      claimExpiresAt: run.claim_expires_at,
      openRequestId: run.open_request_id,
      waitRequestId: run.wait_request_id
    },
    now,
    run.reminders
  )
  return {
    id: run.run_id,
    workflow: line(run.workflow_name, 120),
    session: run.target_session_id,
    state: run.state,
    condition: line(conditionLabel(condition)),
    kind: conditionKind(condition),
    node: run.current_node_id,
    steps: run.step_count,
    maxSteps: run.max_steps,
    claims: run.claims,
    created: ms(run.created_at),
    updated: ms(run.updated_at),
    started: ms(run.started_at),
    ended: ms(run.ended_at),
    error: errorLine(run.error_text),
    end: run.end_kind === null ? null : `${run.end_kind} (by the ${run.end_by ?? "engine"})`,
    interruption:
      run.abort_cause === null
        ? null
        : `${run.abort_cause}${run.abort_node_id === null ? "" : ` at ${run.abort_node_id}`}` +
          (run.abort_pending === 1 ? " (no natural successor yet)" : "")
  }
}

export interface WaitItem {
  readonly request: string
  readonly question: string
  readonly since: number | null
  readonly deadline: number | null
  readonly state: string
  readonly by: string | null
  readonly answered: number | null
  readonly answer: string | null
}

export interface StepItem {
  readonly cursor: string
  /** Nothing about it changes any more. */
  readonly final: boolean
  readonly seq: number
  readonly node: string
  readonly attempt: string
  readonly start: number | null
  readonly end: number | null
  /** ok, timed_out, failed, cancelled, superseded (a takeover), interrupted, waiting or in flight. */
  readonly outcome: string
  readonly limit: number | null
  readonly deadline: number | null
  readonly note: string
  readonly wait: WaitItem | null
  readonly reminders: ReadonlyArray<{ readonly ordinal: number; readonly at: number | null }>
}

export interface Items<A> {
  readonly items: ReadonlyArray<A>
  readonly next: string | null
}

const waitItem = (wait: WaitRow): WaitItem => ({
  request: wait.request_id,
  question: line(wait.prompt),
  since: ms(wait.since),
  deadline: wait.deadline_at,
  state: wait.state,
  by: wait.answered_by,
  answered: ms(wait.answered_at),
  answer: wait.state === "submitted" && wait.answer !== null ? line(wait.answer, 120) : null
})

const outcomeOf = (step: StepRow, wait: WaitRow | undefined): string => {
  if (step.outcome !== null) return step.outcome
  if (step.interrupted === SUPERSEDED) return "superseded"
  if (step.interrupted !== null) return "interrupted"
  return wait?.state === "open" ? "waiting" : "in flight"
}

const noteOf = (step: StepRow, wait: WaitRow | undefined): string => {
  if (step.outcome === "timed_out" && step.timeout_ms !== null)
    return `timed out after ${duration(step.timeout_ms)}`
  if (wait?.state === "open") return "waiting for an answer"
  if (wait?.answered_by !== undefined && wait.answered_by !== null)
    return `answered by the ${wait.answered_by}`
  return line(step.error ?? step.interrupted ?? "")
}

const timing = (step: StepRow) => ({
  nodeId: step.node_id,
  timeoutMs: step.timeout_ms,
  outcome: step.outcome,
  interrupted: step.interrupted,
  startedAt: step.started_at
})

/** A page of step visits as bars; deadlines count from the visit a takeover continued. */
export const stepItems = (page: StepPage): Items<StepItem> => {
  const all = [...page.before, ...page.rows].map(timing)
  const waits = new Map(page.waits.map((wait) => [wait.attempt_id, wait]))
  return {
    next: page.next === null ? null : String(page.next),
    items: page.rows.map((step, i): StepItem => {
      const wait = waits.get(step.attempt_id)
      return {
        cursor: String(step.seq),
        final: step.ended_at !== null,
        seq: step.seq,
        node: step.node_id,
        attempt: step.attempt_id,
        start: ms(step.started_at),
        end: ms(step.ended_at),
        outcome: outcomeOf(step, wait),
        limit: step.timeout_ms,
        deadline: stepDeadline(all, page.before.length + i),
        note: noteOf(step, wait),
        wait: wait === undefined ? null : waitItem(wait),
        reminders: page.reminders
          .filter((r) => r.attempt_id === step.attempt_id)
          .map((r) => ({ ordinal: r.ordinal, at: ms(r.created_at) }))
      }
    })
  }
}

export interface IntentItem {
  readonly cursor: string
  readonly final: boolean
  readonly id: string
  readonly cause: string
  readonly node: string | null
  readonly created: number | null
  readonly eligible: number | null
  /** The delivery claim's lease end while a deliverer holds it. */
  readonly claimedUntil: number | null
  readonly resolved: number | null
  /** workflowPrompt, presentation or fallback: the message path that resolved it. */
  readonly resolution: string | null
  readonly message: string | null
}

export const intentItems = (page: Page<IntentRow, IntentCursor>): Items<IntentItem> => ({
  next: page.next === null ? null : JSON.stringify(page.next),
  items: page.rows.map(
    (intent): IntentItem => ({
      cursor: JSON.stringify([intent.requested_at, intent.intent_id]),
      final: intent.resolved_at !== null,
      id: intent.intent_id,
      cause: intent.cause,
      node: intent.node_id,
      created: ms(intent.requested_at),
      eligible: ms(intent.eligible_at),
      claimedUntil:
        intent.resolved_at === null && intent.delivery_claim_token !== null
          ? intent.delivery_claim_expires_at
          : null,
      resolved: ms(intent.resolved_at),
      resolution: intent.resolution,
      message: intent.resolution_message_id === null ? null : line(intent.resolution_message_id, 80)
    })
  )
})

export interface EventItem {
  readonly cursor: string
  readonly final: true
  readonly seq: number
  readonly kind: string
  readonly at: number | null
  readonly text: string
}

export const eventItems = (page: Page<EventRow, number>): Items<EventItem> => ({
  next: page.next === null ? null : String(page.next),
  items: page.rows.map(
    (event): EventItem => ({
      cursor: String(event.seq),
      final: true,
      seq: event.seq,
      kind: event.kind,
      at: ms(event.created_at),
      // An adoption moved the run (and its claim) to another session: said from its facts.
      text:
        event.adoption === null
          ? line(event.message)
          : line(
              `moved from session ${event.adoption.fromSessionId} to ${event.adoption.toSessionId} ` +
                `with ${event.adoption.intents.length} pending intent(s)`
            )
    })
  )
})

export interface ChainLink {
  readonly id: string
  readonly relation: string
  readonly note: string | null
}

/**
 * The run's restart chain (workflow_run_launches): the earlier runs its lineage names, root
 * first, the run itself, the runs that restarted it in turn, and a launch its terminal turn made.
 */
export const chainLinks = (
  runId: string,
  own: LaunchRecord | null,
  restarts: ReadonlyArray<LaunchRecord>,
  launched: LaunchRecord | null
): ReadonlyArray<ChainLink> => {
  const earlier = own?.launch.lineage?.earlier ?? []
  if (earlier.length === 0 && restarts.length === 0 && launched === null) return []
  return [
    ...earlier.map(
      (run, i): ChainLink => ({
        id: run.runId,
        relation: i === 0 ? "root" : `restart ${i}`,
        note: line(`${run.state} (${run.reasonKind})`, 80)
      })
    ),
    {
      id: runId,
      relation: earlier.length === 0 ? "this run (root)" : `this run (restart ${earlier.length})`,
      note: null
    },
    ...restarts.map(
      (launch, i): ChainLink => ({
        id: launch.runId,
        relation: `restart ${earlier.length + i + 1}`,
        note: null
      })
    ),
    ...(launched === null || restarts.some((r) => r.runId === launched.runId)
      ? []
      : [{ id: launched.runId, relation: `launched by its terminal turn (${launched.kind})`, note: null }])
  ]
}
