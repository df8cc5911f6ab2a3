/**
 * What the operator CLI prints for intents and runs: table rows, the `show` pages and the
 * `--json` shapes. Pure over store records, the current time and a Style.
 */
import { Option } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { RunRecord, RunState, StepRecord } from "../store/run-store.ts"
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
  return table(
    style,
    ["INTENT", "RUN", "CAUSE", "NODE", "STAGE", "REQUESTED", "SESSION"],
    intents.map((intent): ReadonlyArray<Cell> => {
      const stage = intentStage(intent, style.now)
      return [
        cell(intent.intentId),
        cell(intent.runId),
        cell(intent.cause),
        cell(clip(intent.nodeId ?? "-", 24)),
        cell(stage.text, stage.tone),
        cell(relative(style.now, intent.requestedAt)),
        cell(intent.targetSessionId)
      ]
    })
  )
}

export const runsTable = (style: Style, runs: ReadonlyArray<RunRecord>): string => {
  if (runs.length === 0) return "no workflow runs match"
  return table(
    style,
    ["RUN", "WORKFLOW", "STATE", "NODE", "STEPS", "CREATED", "UPDATED", "SESSION"],
    runs.map(
      (run): ReadonlyArray<Cell> => [
        cell(run.runId),
        cell(clip(run.workflowName, 32)),
        cell(run.state, runTone(run.state)),
        cell(clip(run.currentNodeId ?? "-", 24)),
        cell(`${run.stepCount}/${run.maxSteps}`),
        cell(relative(style.now, run.createdAt)),
        cell(relative(style.now, run.updatedAt)),
        cell(run.targetSessionId)
      ]
    )
  )
}

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
            cell(clip(step.error ?? step.interrupted ?? "", 60))
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
    ["steps", `${run.stepCount} of at most ${run.maxSteps}`],
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
