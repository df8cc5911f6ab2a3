/**
 * The `intents` and `runs` tables. By default a line fits 80 columns: short IDs (unique prefixes,
 * see short-ids.ts), relative times, and long workflow, node and cause names cut with `…`;
 * `--wide` (Style.wide) shows every column in full.
 */
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { RunRecord, RunState } from "../store/run-store.ts"
import { type Cell, cell, clip, fitted, relative, type Style, type Tone, table } from "./format.ts"
import { shortIntentIds, shortRunIds } from "./short-ids.ts"

/** Where an intent is in its life, as one word or phrase. */
export const intentStage = (
  intent: TurnIntent,
  now: number
): { readonly text: string; readonly tone: Tone } => {
  if (intent.resolution !== null) return { text: `resolved (${intent.resolution})`, tone: "good" }
  if (intent.deliveryClaimToken !== null) {
    return (intent.deliveryClaimExpiresAt ?? 0) > now
      ? { text: "claimed", tone: "warn" }
      : { text: "claim expired", tone: "bad" }
  }
  return intent.eligibleAt !== null ? { text: "eligible", tone: "warn" } : { text: "pending", tone: "warn" }
}

export const runTone = (state: RunState): Tone =>
  state === "completed"
    ? "good"
    : state === "failed" || state === "timed_out" || state === "cancelled"
      ? "bad"
      : "warn"

export const intentsTable = (style: Style, intents: ReadonlyArray<TurnIntent>): string => {
  if (intents.length === 0) return "no turn intents match"
  if (style.wide === true) {
    return table(
      style,
      ["INTENT", "RUN", "CAUSE", "NODE", "STAGE", "REQUESTED", "SESSION"],
      intents.map((intent): ReadonlyArray<Cell> => {
        const stage = intentStage(intent, style.now)
        return [
          cell(intent.intentId),
          cell(intent.runId),
          cell(intent.cause),
          cell(intent.nodeId ?? "-"),
          cell(stage.text, stage.tone),
          cell(relative(style.now, intent.requestedAt)),
          cell(intent.targetSessionId)
        ]
      })
    )
  }
  const shortIntent = shortIntentIds(intents.map((i) => i.intentId))
  const shortRun = shortRunIds(intents.map((i) => i.runId))
  const headers = ["INTENT", "RUN", "CAUSE", "NODE", "STAGE", "REQUESTED"]
  const rows = intents.map((intent): ReadonlyArray<Cell> => {
    const stage = intentStage(intent, style.now)
    return [
      cell(shortIntent(intent.intentId)),
      cell(shortRun(intent.runId)),
      cell(intent.cause),
      cell(clip(intent.nodeId ?? "-", 24)),
      cell(stage.text, stage.tone),
      cell(relative(style.now, intent.requestedAt))
    ]
  })
  return table(
    style,
    headers,
    fitted(
      headers,
      rows,
      new Map([
        [1, 8],
        [2, 8],
        [3, 4],
        [4, 12]
      ])
    )
  )
}

export const runsTable = (style: Style, runs: ReadonlyArray<RunRecord>): string => {
  if (runs.length === 0) return "no workflow runs match"
  if (style.wide === true) {
    return table(
      style,
      ["RUN", "WORKFLOW", "STATE", "NODE", "STEPS", "CREATED", "UPDATED", "SESSION"],
      runs.map(
        (run): ReadonlyArray<Cell> => [
          cell(run.runId),
          cell(run.workflowName),
          cell(run.state, runTone(run.state)),
          cell(run.currentNodeId ?? "-"),
          cell(`${run.stepCount}/${run.maxSteps}`),
          cell(relative(style.now, run.createdAt)),
          cell(relative(style.now, run.updatedAt)),
          cell(run.targetSessionId)
        ]
      )
    )
  }
  const shortRun = shortRunIds(runs.map((r) => r.runId))
  const headers = ["RUN", "WORKFLOW", "STATE", "NODE", "STEPS", "UPDATED", "SESSION"]
  const rows = runs.map(
    (run): ReadonlyArray<Cell> => [
      cell(shortRun(run.runId)),
      cell(clip(run.workflowName, 24)),
      cell(run.state, runTone(run.state)),
      cell(clip(run.currentNodeId ?? "-", 24)),
      cell(`${run.stepCount}/${run.maxSteps}`),
      cell(relative(style.now, run.updatedAt)),
      cell(run.targetSessionId)
    ]
  )
  return table(
    style,
    headers,
    fitted(
      headers,
      rows,
      new Map([
        [1, 6],
        [3, 4],
        [6, 7]
      ])
    )
  )
}
