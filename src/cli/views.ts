/**
 * What the operator CLI prints for intents and runs: table rows, the `show` pages and the
 * `--json` shapes. Pure over store records, the current time and a Style.
 */
import { Option } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { RunRecord, StepRecord } from "../store/run-store.ts"
import {
  type Cell,
  cell,
  clip,
  duration,
  fields,
  paint,
  relative,
  type Style,
  type Tone,
  table
} from "./format.ts"
import { intentStage, intentsTable, runTone } from "./tables.ts"

const stamp = (style: Style, at: string | null): string =>
  at === null ? "-" : `${at} (${relative(style.now, at)})`

const compactJson = (value: unknown, max = 200): string => clip(JSON.stringify(value) ?? "undefined", max)

const span = (from: string | null, to: string | null): string | null => {
  if (from === null || to === null) return null
  const ms = Date.parse(to) - Date.parse(from)
  return Number.isNaN(ms) ? null : duration(ms)
}

/** One intent: its record and its life, created → eligible → claimed → resolved. */
export const showIntent = (style: Style, intent: TurnIntent): string => {
  const stage = intentStage(intent, style.now)
  const claim =
    intent.deliveryClaimToken === null
      ? "-"
      : `held by ${intent.deliveryClaimToken} until ${relative(style.now, intent.deliveryClaimExpiresAt)}`
  const record = fields(style, [
    ["intent", intent.intentId],
    ["stage", stage.text, stage.tone],
    ["run", intent.runId],
    ["workflow", intent.workflowRef],
    ["session", intent.targetSessionId],
    ["cause", intent.cause],
    ["node", intent.nodeId ?? "-"],
    ["attempt", intent.attemptId ?? "-"],
    ["source event", intent.sourceEventId],
    ["reason", intent.facts.reason ?? "-"]
  ])
  const life = fields(style, [
    ["created", stamp(style, intent.requestedAt)],
    [
      "eligible",
      intent.eligibleAt === null
        ? "not yet (a natural successor may still come)"
        : stamp(style, intent.eligibleAt)
    ],
    ["claimed", claim],
    [
      "resolved",
      intent.resolvedAt === null
        ? "not yet"
        : `${stamp(style, intent.resolvedAt)} by ${intent.resolution ?? "?"} (message ${intent.resolutionMessageId ?? "?"})`,
      intent.resolvedAt === null ? "warn" : "good"
    ]
  ])
  return `${record}\n\n${paint(style, "dim", "life")}\n${life}`
}

const stepsTable = (style: Style, steps: ReadonlyArray<StepRecord>): string =>
  steps.length === 0
    ? "no steps yet"
    : table(
        style,
        ["#", "NODE", "OUTCOME", "STARTED", "TOOK", "LIMIT", "NOTE"],
        steps.map((step): ReadonlyArray<Cell> => {
          const outcome = step.outcome ?? (step.interrupted !== null ? "interrupted" : "in flight")
          return [
            cell(String(step.seq)),
            cell(clip(step.nodeId, 24)),
            cell(outcome, outcome === "ok" ? "good" : outcome === "in flight" ? "warn" : "bad"),
            cell(relative(style.now, step.startedAt)),
            cell(span(step.startedAt, step.endedAt) ?? "-"),
            cell(step.timeoutMs === null ? "-" : duration(step.timeoutMs)),
            // A timeout said from its structured limit, in the one duration format (not the stored text's ms).
            cell(
              step.outcome === "timed_out" && step.timeoutMs !== null
                ? `timed out after ${duration(step.timeoutMs)}`
                : clip(step.error ?? step.interrupted ?? "", 60)
            )
          ]
        })
      )

/** One run: its record, its step history and the turn intents it raised. */
export const showRun = (
  style: Style,
  run: RunRecord,
  steps: ReadonlyArray<StepRecord>,
  intents: ReadonlyArray<TurnIntent>,
  chain: ReadonlyArray<string> = []
): string => {
  const took = span(run.startedAt, run.endedAt)
  const entries: Array<readonly [string, string, Tone?]> = [
    ["run", run.runId],
    [
      "workflow",
      `${run.workflowName} (${run.workflowRef}${run.revision === null ? "" : `, revision ${run.revision}`})`
    ],
    ["state", run.state, runTone(run.state)],
    ["node", run.currentNodeId ?? "-"],
    // Counted steps are the settled ones; a visit still open or interrupted is listed below, not counted.
    ["steps", `${run.stepCount} settled (the limit is ${run.maxSteps})`],
    ["session", `${run.targetSessionId} (started from a ${run.origin})`],
    ["created", stamp(style, run.createdAt)],
    ["started", stamp(style, run.startedAt)],
    [
      "ended",
      run.endedAt === null ? "-" : `${stamp(style, run.endedAt)}${took === null ? "" : `, took ${took}`}`
    ],
    ["input", compactJson(run.input)]
  ]
  if (run.claimToken !== null) {
    entries.push(["claim", `${run.claimToken}, lease ends ${relative(style.now, run.claimExpiresAt)}`])
  }
  if (run.pauseRequested) entries.push(["pause", "requested"])
  if (run.cancelRequested !== null) entries.push(["cancel", `requested by the ${run.cancelRequested}`])
  if (run.parkedReason !== null) entries.push(["parked", run.parkedReason])
  if (run.error !== null) {
    const at = run.error.nodeId === null ? "" : ` (at ${run.error.nodeId})`
    entries.push(["error", `${run.error.message}${at}`, "bad"])
    if (run.error.original !== null) entries.push(["cause", run.error.original, "bad"])
  }
  if (Option.isSome(run.result)) entries.push(["result", compactJson(run.result.value)])
  const sections = [
    fields(style, entries),
    `${paint(style, "dim", "steps")}\n${stepsTable(style, steps)}`,
    `${paint(style, "dim", "turn intents")}\n${intents.length === 0 ? "none" : intentsTable(style, intents)}`,
    `${paint(style, "dim", "restart chain")}\n${chain.length === 0 ? "none" : chain.join("\n")}`
  ]
  return sections.join("\n\n")
}

const optionJson = (value: Option.Option<unknown>): unknown => Option.getOrNull(value)

/** The run record for `--json`: Options become the value or null. */
export const runJson = (run: RunRecord) => ({ ...run, result: optionJson(run.result) })

export const stepJson = (step: StepRecord) => ({ ...step, output: optionJson(step.output) })
