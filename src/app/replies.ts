/** Text replies for the tool and the command: short, factual, bounded. */
import { ForeignRun } from "../domain/identity.ts"
import type { Adopted, RunStatus, RunSummary, StepView } from "../engine/engine.ts"
import type { WaitView } from "../engine/messages.ts"
import { InvalidWorkflowInput } from "../engine/errors.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints as clip, duration, relative } from "../domain/text.ts"
import { MAX_ERROR_CHARS } from "./input-bounds.ts"

export interface Reply {
  readonly text: string
  readonly isError: boolean
  readonly details: Readonly<Record<string, unknown>>
}

export const ok = (text: string, details: Readonly<Record<string, unknown>> = {}): Reply => ({
  text,
  isError: false,
  details
})

/** Structured fields of a refusal a program may act on, kept next to its kind. */
const refusalFields = (error: unknown): Readonly<Record<string, unknown>> =>
  error instanceof ForeignRun
    ? { runId: error.runId, ownerSessionId: error.ownerSessionId, action: error.action }
    : {}

/**
 * Every failure of a tool or command action becomes one readable line, never a stack trace,
 * of at most `MAX_ERROR_CHARS` code points. The error's kind stays in `details` for programs;
 * people read only the message.
 */
export const failed = (action: string, error: unknown): Reply => {
  const tag =
    typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : error instanceof Error && error.name !== "Error"
        ? error.name
        : "Error"
  const message = error instanceof Error ? error.message : String(error)
  const text = clip(`workflow ${action} failed: ${message}`, MAX_ERROR_CHARS)
  return { text, isError: true, details: { error: tag, ...refusalFields(error) } }
}

/**
 * A start refused for its input, with the call that would pass in the caller's own form (the
 * `/workflow` command or the tool), built from the workflow's example input.
 */
export const withStartExample = (reply: Reply, error: unknown, form: "command" | "tool"): Reply => {
  if (!(error instanceof InvalidWorkflowInput) || error.example === null) return reply
  const input = JSON.stringify(error.example)
  const call =
    form === "command"
      ? `/workflow start ${error.workflow} ${input}`
      : JSON.stringify({ action: "start", workflow: error.workflow, input: error.example })
  return { ...reply, text: clip(`${reply.text}\nA correct call: ${call}`, MAX_ERROR_CHARS) }
}

/** One line per run: its condition (what its state means now, not only the stored state). */
export const describeRun = (run: RunSummary): string => {
  const parts = [`run ${run.runId}`, `workflow ${run.workflowRef}`, `state ${run.condition}`]
  if (run.currentNodeId !== null) parts.push(`node ${run.currentNodeId}`)
  if (run.openRequestId !== null) parts.push(`open request ${run.openRequestId}`)
  parts.push(`steps ${run.steps}/${run.maxSteps}`)
  if (run.error !== null) parts.push(`error: ${run.error.message}`)
  return parts.join(" · ")
}

/** `2026-12-02T17:10:00.000Z (in 8m)`: a deadline, absolute and from now. */
export const deadlineText = (deadlineAt: string, now: number): string => {
  const left = Date.parse(deadlineAt) - now
  return `${deadlineAt} (${left > 0 ? `in ${duration(left)}` : `passed ${duration(-left)} ago`})`
}

/** The step in flight's limit and deadline, as one line, or "" when it has none. */
const deadlineLine = (status: RunStatus, now: number): string => {
  const step = status.stepRecords[status.stepRecords.length - 1]
  if (status.deadlineAt === null || step === undefined || step.timeoutMs === null) return ""
  return `\nStep ${step.nodeId}: limit ${duration(step.timeoutMs)}, deadline ${deadlineText(status.deadlineAt, now)}`
}

/** `/workflow resume <runId>` of another session's run: the adoption, in the user's words. */
export const describeAdoption = ({ run, adoption }: Adopted): string => {
  if (adoption === null) return `Resumed ${describeRun(run)}`
  const owed = adoption.intents.length
  const moved =
    owed === 0 ? "" : ` ${owed === 1 ? "One owed turn" : `${owed} owed turns`} of the run moved with it.`
  return (
    `Adopted ${describeRun(run)} from session ${adoption.fromSessionId}: it belongs to this session now and ` +
    `continues here (the step in flight runs again; its prompt comes to this session).${moved}`
  )
}

/** `/workflow list --all`: the project's runs, newest first, each with its owning session and age. */
export const describeProjectRuns = (
  runs: ReadonlyArray<RunSummary>,
  sessionId: string,
  now: number,
  more: boolean
): string => {
  if (runs.length === 0) return "No workflow runs in this project."
  const lines = runs.map((run) => {
    const owner = run.targetSessionId === sessionId ? "this session" : `session ${run.targetSessionId}`
    return `- ${run.runId} · ${run.workflowName} · ${run.condition} · ${owner} · created ${relative(now, run.createdAt)}`
  })
  const older = more ? [`… older runs exist; these are the ${runs.length} newest.`] : []
  const adoptable = runs.some((run) => run.targetSessionId !== sessionId && run.endedAt === null)
  const hint = adoptable
    ? ["/workflow resume <runId> takes over another session's run that no Pi runs now."]
    : []
  return [`Workflow runs of this project, newest first:`, ...lines, ...older, ...hint].join("\n")
}

const MAX_STATUS_JSON = 16_000

/** Status as text plus bounded JSON the model can read; the step's deadline right under the summary line. */
export const describeStatus = (status: RunStatus, now: number): string => {
  // Redacted before the cut, so no credential is left as an unrecognisable prefix.
  const json = redactText(JSON.stringify(status, null, 2))
  const clipped = clip(json, MAX_STATUS_JSON)
  const body = clipped === json ? json : `${clipped}\n…[truncated]`
  return `${describeRun(status)}${deadlineLine(status, now)}\n${body}`
}

const span = (from: string | null, to: string | null): string | null => {
  if (from === null || to === null) return null
  const ms = Date.parse(to) - Date.parse(from)
  return Number.isNaN(ms) ? null : duration(ms)
}

const stepLine = (step: StepView, now: number): string => {
  const took = span(step.startedAt, step.endedAt)
  const outcome =
    step.outcome === null
      ? step.interrupted === null
        ? `in flight for ${relative(now, step.startedAt).replace(/ ago$/, "")}`
        : `interrupted (${step.interrupted})`
      : step.outcome.replace("_", " ")
  const open = step.outcome === null && step.interrupted === null
  const limit =
    step.timeoutMs === null
      ? open
        ? ", no limit known"
        : ""
      : `, limit ${duration(step.timeoutMs)}${step.interrupted !== null && step.outcome === null ? " (restarts when resumed)" : ""}`
  const deadline = open && step.deadlineAt !== null ? `, deadline ${deadlineText(step.deadlineAt, now)}` : ""
  const error = step.error === null ? "" : `: ${step.error}`
  return `  ${step.seq}. ${step.nodeId} — ${outcome}${took === null ? "" : ` after ${took}`}${limit}${deadline}${error}`
}

/** What the user can do about a run that is not moving, after its condition. */
const conditionHint = (status: RunStatus): string => {
  if (status.waitRequestId !== null)
    return ` (/workflow answer ${status.runId} <text> answers it, /workflow cancel stops it)`
  if (status.state === "waiting") return " (held: /workflow resume continues it, /workflow cancel stops it)"
  if (status.state !== "running") return ""
  if (status.parkedReason !== null) return ` (/workflow resume ${status.runId} continues it)`
  return status.claimed ? "" : ` (no live owner: /workflow resume ${status.runId} continues it here)`
}

const MAX_STATUS_STEPS = 20
/** The question's first line as a status shows it. */
const MAX_QUESTION_CHARS = 200

/** What a waiting run asks, since when (the prompt is stored redacted). */
export const waitingLines = (waiting: WaitView, now: number): ReadonlyArray<string> => [
  `Waiting since ${relative(now, waiting.since)} for: ${clip(oneLineOf(waiting.prompt), MAX_QUESTION_CHARS)}`
]

const oneLineOf = (text: string): string => text.replace(/\s+/g, " ").trim()

/** `/workflow status <runId>` for people: state, node, steps, timing and the last error. */
export const readableStatus = (status: RunStatus, now: number): string => {
  const revision = status.revision === null ? "" : ` (revision ${status.revision})`
  const lines = [
    `Run ${status.runId} of ${status.workflowName}${revision}: ${status.condition.replace("_", " ")}${conditionHint(status)}`
  ]
  if (status.currentNodeId !== null) {
    const request =
      status.openRequestId === null
        ? ""
        : status.waitRequestId !== null
          ? ` (waiting for an answer, request ${status.openRequestId})`
          : ` (waiting for the model's answer, request ${status.openRequestId})`
    lines.push(`Node: ${status.currentNodeId}${request}`)
  }
  if (status.waiting !== null) lines.push(...waitingLines(status.waiting, now))
  if (status.deadlineAt !== null) lines.push(`Deadline: ${deadlineText(status.deadlineAt, now)}`)
  const timing = [`created ${relative(now, status.createdAt)}`]
  if (status.startedAt !== null) timing.push(`started ${relative(now, status.startedAt)}`)
  if (status.endedAt !== null) {
    const took = span(status.startedAt ?? status.createdAt, status.endedAt)
    timing.push(`ended ${relative(now, status.endedAt)}${took === null ? "" : ` after ${took}`}`)
  }
  lines.push(`Time: ${timing.join(", ")}`)
  lines.push(`Steps: ${status.steps} settled (the limit is ${status.maxSteps})`)
  const shown = status.stepRecords.slice(-MAX_STATUS_STEPS)
  if (shown.length < status.stepRecords.length) {
    lines.push(`  … ${status.stepRecords.length - shown.length} earlier steps`)
  }
  for (const step of shown) lines.push(stepLine(step, now))
  if (status.parkedReason !== null) lines.push(`Parked: ${status.parkedReason}`)
  if (status.pauseRequested) lines.push("Pause requested: it holds at the next step boundary")
  if (status.cancelRequested !== null) lines.push(`Cancel requested by the ${status.cancelRequested}`)
  if (status.error !== null) {
    const at = status.error.nodeId === null ? "" : ` (at ${status.error.nodeId})`
    lines.push(`Last error: ${status.error.message}${at}`)
  }
  return lines.join("\n")
}

/** The one notice after the user's Escape held a run. */
export const heldAfterEscape = (run: { readonly runId: string; readonly workflowName: string }): string =>
  `Workflow ${run.workflowName} (run ${run.runId}) is on hold after Escape. ` +
  "/workflow resume continues it; /workflow cancel stops it."

/** `/workflow cancel` stopped the model's turn on the run's step as well. */
export const cancelledWithTurn = (run: RunSummary): string =>
  `Cancelled ${describeRun(run)}. The model's turn on its step was stopped too; no new turn follows.`
