/**
 * The terminal decision: what the model is told once a top-level run has ended, built from the
 * stored run and its lineage only. It states the facts (workflow and revision, run, exact input,
 * bounded result or error, terminal state and reason kind, restart count, earlier outcomes of
 * the chain) and asks the model to decide with the conversation it already has. Nothing here
 * reads, copies, hashes or stores a user message. Pure.
 */
import { Option } from "effect"
import type { RunRecord } from "../store/run-store.ts"
import { decideRestart } from "./restart-policy.ts"
import { type Lineage, RESTART_LIMIT, restartCount } from "./lineage.ts"
import { type ReasonKind, reasonKind, terminalState } from "./terminal-outcome.ts"

/** Bounds of the JSON blocks; the facts lines are always kept. */
export const MAX_INPUT_CHARS = 16_000
export const MAX_RESULT_CHARS = 8_000
const MAX_CARD_FIELD = 200

/** Small, bounded card fields the TUI renderer reads (never parsed from the prompt). */
export interface TerminalCard {
  readonly workflowName: string
  readonly observedState: string
  readonly runId: string
  readonly reasonKind: ReasonKind
  readonly restartCount: number
  readonly restartLimit: number
}

export interface TerminalDecision {
  readonly card: TerminalCard
  /** The decision block the model reads. */
  readonly text: string
  /** Whether `restart` would be accepted for this run right now (given the same loaded source). */
  readonly restartable: boolean
}

const clip = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 14)} …[truncated]`

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? "null"

const REASON_TEXT: Record<ReasonKind, string> = {
  completed: "the workflow reached its last step",
  failed: "a step failed",
  maxSteps: "the run used up its step budget (maxSteps)",
  timedOut: "a step reached its time limit",
  agentCancelled: "the agent cancelled the run",
  userCancelled: "the user cancelled the run",
  launchFailed: "the queued run could not start",
  controllerInterrupted: "the workflow controller stopped the run"
}

/** What the model should lean towards for this ending (never a command). */
const defaultAdvice = (kind: ReasonKind, restartable: boolean, runId: string): string => {
  const restart = `{"action": "restart", "runId": "${runId}"}`
  switch (kind) {
    case "completed":
      return (
        "Default: stop. The workflow completed; restart only if its result itself shows the work is " +
        `unfinished for a technical or temporary reason${restartable ? ` (${restart})` : ""}.`
      )
    case "userCancelled":
      return "Default: stop. The user cancelled this run; do not restart or replace it unless the user asks."
    default:
      return restartable
        ? `Default: if the task is unfinished because of a technical or temporary problem, prefer one safe restart with the workflow tool: ${restart}.`
        : "Restart is not available for this run (see below); stop or ask the user."
  }
}

const refusalLine = (run: RunRecord, lineage: Lineage | null, sessionId: string): string | null => {
  // Judged against the run's own source: whether that source is still loaded is checked at restart.
  const decided = decideRestart({
    run,
    lineage,
    sessionId,
    loaded: { revision: run.revision, fingerprint: run.sourceFingerprint },
    restartedAs: null
  })
  return decided._tag === "Left" ? decided.left.detail : null
}

/** Build the terminal decision for a run that has ended; null while it has not. */
export const terminalDecision = (run: RunRecord, lineage: Lineage | null): TerminalDecision | null => {
  const state = terminalState(run)
  const kind = reasonKind(run)
  if (state === null || kind === null) return null
  const refusal = refusalLine(run, lineage, run.targetSessionId)
  const restartable = refusal === null
  const restarts = restartCount(lineage)
  const lines = [
    `Workflow run ended: "${run.workflowName}" (revision ${run.revision ?? "none"}), run ${run.runId}.`,
    `- terminal state: ${state}`,
    `- reason: ${kind} (${REASON_TEXT[kind]})`
  ]
  if (run.error !== null) {
    lines.push(`- error: ${clip(run.error.message, MAX_RESULT_CHARS)}`)
    if (run.error.nodeId !== null) lines.push(`- at node: ${run.error.nodeId}`)
  }
  lines.push(
    `- restarts: ${restarts} of ${RESTART_LIMIT}` +
      (lineage === null ? "" : ` (chain root ${lineage.rootRunId}, restarted from ${lineage.parentRunId})`),
    "",
    "Input (exact):",
    clip(json(run.input), MAX_INPUT_CHARS)
  )
  if (Option.isSome(run.result)) lines.push("", "Result:", clip(json(run.result.value), MAX_RESULT_CHARS))
  if (lineage !== null && lineage.earlier.length > 0) {
    lines.push("", "Earlier runs of this restart chain:")
    for (const previous of lineage.earlier) {
      lines.push(`- run ${previous.runId}: ${previous.state} (${previous.reasonKind}): ${previous.summary}`)
    }
  }
  lines.push(
    "",
    "Decide what happens next. The run ending does not show that the user's task is done: use the " +
      "conversation so far and this result. Stop when the work is complete, the user cancelled it, " +
      "new authority or a decision from the user is needed, or the same failure keeps repeating. " +
      "When the work is unfinished only because of a technical or temporary failure, a safe restart " +
      "is preferred. Use Monitor only for an external wait the user authorized.",
    defaultAdvice(kind, restartable, run.runId)
  )
  if (refusal !== null) lines.push(`Restart is not possible: ${refusal}.`)
  lines.push(
    "You may launch at most one workflow in this turn (restart, monitor or another start); it begins " +
      "after this turn ends. A second launch is refused."
  )
  return {
    card: {
      workflowName: clip(run.workflowName, MAX_CARD_FIELD),
      observedState: state,
      runId: clip(run.runId, MAX_CARD_FIELD),
      reasonKind: kind,
      restartCount: restarts,
      restartLimit: RESTART_LIMIT
    },
    text: lines.join("\n"),
    restartable
  }
}
