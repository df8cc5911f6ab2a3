/**
 * What the operator CLI prints for intents and runs: the `intents` and `runs` tables, the `show`
 * pages and the `--json` shapes. Pure over store records, the current time and a Style. By
 * default a table line fits 80 columns: short IDs (unique prefixes, as git shows commits),
 * relative times, and long workflow, node and cause names cut with `…`; `--wide` (Style.wide)
 * shows every column in full.
 */
import { Option } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { conditionKind, conditionLabel, isStalled, runCondition } from "../domain/run-condition.ts"
import { currentDeadline, inFlight, stepDeadline } from "../domain/step-deadline.ts"
import { duration, relative } from "../domain/text.ts"
import type { RunRecord, RunState, StepRecord } from "../store/run-store.ts"
import type { WaitRecord } from "../store/run-waits.ts"
import {
  type Cell,
  cell,
  clip,
  fields,
  fitted,
  paint,
  stamp,
  type Style,
  type Tone,
  table
} from "./format.ts"
import { waitEntries, waitNote } from "./waits.ts"

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

/** An in-flight step's deadline from now (`in 8m`, `passed 2m ago`); "-" for a step that ended. */
const deadlineCell = (style: Style, steps: ReadonlyArray<StepRecord>, index: number): Cell => {
  const step = steps[index]
  const deadline = step !== undefined && inFlight(step) ? stepDeadline(steps, index) : null
  if (deadline === null) return cell("-")
  const left = deadline - style.now
  return left > 0 ? cell(`in ${duration(left)}`, "warn") : cell(`passed ${duration(-left)} ago`, "bad")
}

/** A step's note: its timeout from its structured limit, a wait's answer, else its error or interruption. */
const stepNote = (style: Style, step: StepRecord, wait: WaitRecord | undefined): string => {
  // A timeout said from its structured limit, in the one duration format (not the stored text's ms).
  if (step.outcome === "timed_out" && step.timeoutMs !== null)
    return `timed out after ${duration(step.timeoutMs)}`
  const answered = wait === undefined ? null : waitNote(style, wait)
  return answered ?? clip(step.error ?? step.interrupted ?? "", 60)
}

const stepsTable = (
  style: Style,
  steps: ReadonlyArray<StepRecord>,
  waits: ReadonlyMap<string, WaitRecord>
): string =>
  steps.length === 0
    ? "no steps yet"
    : table(
        style,
        ["#", "NODE", "OUTCOME", "STARTED", "TOOK", "LIMIT", "DEADLINE", "NOTE"],
        steps.map((step, index): ReadonlyArray<Cell> => {
          const outcome = step.outcome ?? (step.interrupted !== null ? "interrupted" : "in flight")
          return [
            cell(String(step.seq)),
            cell(clip(step.nodeId, 24)),
            cell(outcome, outcome === "ok" ? "good" : outcome === "in flight" ? "warn" : "bad"),
            cell(relative(style.now, step.startedAt)),
            cell(span(step.startedAt, step.endedAt) ?? "-"),
            cell(step.timeoutMs === null ? "-" : duration(step.timeoutMs)),
            deadlineCell(style, steps, index),
            cell(stepNote(style, step, waits.get(step.attemptId)))
          ]
        })
      )

/** The deadline of the step in flight, absolute and from now; why there is none otherwise. */
const deadlineField = (style: Style, steps: ReadonlyArray<StepRecord>): string => {
  const deadline = currentDeadline(steps)
  if (deadline === null) {
    const last = steps[steps.length - 1]
    return last !== undefined && inFlight(last) ? "- (no limit known)" : "- (no step in flight)"
  }
  return stamp(style, new Date(deadline).toISOString())
}

/**
 * One run: its condition, its record, its step history and the turn intents it raised; for a run
 * waiting at a checkpoint, what it asks and how to answer (`waits`: the run's waits, any state).
 */
export const showRun = (
  style: Style,
  run: RunRecord,
  steps: ReadonlyArray<StepRecord>,
  intents: ReadonlyArray<TurnIntent>,
  chain: ReadonlyArray<string> = [],
  reminders: Reminders = new Map(),
  waits: ReadonlyArray<WaitRecord> = []
): string => {
  const took = span(run.startedAt, run.endedAt)
  const requestId = run.waitRequestId
  const waiting =
    requestId === null
      ? [["deadline", deadlineField(style, steps)] as const]
      : waitEntries(
          style,
          run,
          requestId,
          waits.find((wait) => wait.requestId === requestId)
        )
  const entries: Array<readonly [string, string, Tone?]> = [
    ["run", run.runId],
    [
      "workflow",
      `${run.workflowName} (${run.workflowRef}${run.revision === null ? "" : `, revision ${run.revision}`})`
    ],
    ["state", conditionLabel(runCondition(run, style.now, sentFor(run, reminders))), runTone(run.state)],
    ["node", run.currentNodeId ?? "-"],
    ...waiting,
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
    `${paint(style, "dim", "steps")}\n${stepsTable(style, steps, new Map(waits.map((w) => [w.attemptId, w])))}`,
    `${paint(style, "dim", "turn intents")}\n${intents.length === 0 ? "none" : intentsTable(style, intents)}`,
    `${paint(style, "dim", "restart chain")}\n${chain.length === 0 ? "none" : chain.join("\n")}`
  ]
  return sections.join("\n\n")
}

/** Step reminders sent per attempt (operator-reads `remindersSent`). */
export type Reminders = ReadonlyMap<string, number>

/** The reminders sent for the attempt a run stands at. */
export const sentFor = (run: RunRecord, reminders: Reminders): number =>
  run.currentAttemptId === null ? 0 : (reminders.get(run.currentAttemptId) ?? 0)

const optionJson = (value: Option.Option<unknown>): unknown => Option.getOrNull(value)

/** The run record for `--json`: Options become the value or null; its condition at `now` beside its state. */
export const runJson = (run: RunRecord, now: number, reminders: Reminders = new Map()) => {
  const condition = runCondition(run, now, sentFor(run, reminders))
  return {
    ...run,
    result: optionJson(run.result),
    condition: conditionLabel(condition),
    conditionKind: conditionKind(condition)
  }
}

export const stepJson = (step: StepRecord) => ({ ...step, output: optionJson(step.output) })

/*
 * The `intents` and `runs` tables. By default a line fits 80 columns: short IDs (unique prefixes,
 * below), relative times, and long workflow, node and cause names cut with `…`;
 * `--wide` (Style.wide) shows every column in full.
 */
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

/** What a run's state means now (domain/run-condition.ts): a run not moving is never shown `running`. */
const conditionCell = (style: Style, run: RunRecord, reminders: Reminders): Cell => {
  const condition = runCondition(run, style.now, sentFor(run, reminders))
  const tone = condition._tag === "Running" ? "warn" : isStalled(condition) ? "bad" : runTone(run.state)
  return cell(conditionLabel(condition), tone)
}

export const runsTable = (
  style: Style,
  runs: ReadonlyArray<RunRecord>,
  reminders: Reminders = new Map()
): string => {
  if (runs.length === 0) return "no workflow runs match"
  if (style.wide === true) {
    return table(
      style,
      ["RUN", "WORKFLOW", "STATE", "NODE", "STEPS", "CREATED", "UPDATED", "SESSION"],
      runs.map(
        (run): ReadonlyArray<Cell> => [
          cell(run.runId),
          cell(run.workflowName),
          conditionCell(style, run, reminders),
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
      conditionCell(style, run, reminders),
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

/*
 * Short IDs, as git shows commits: a table shows the shortest prefix that is unique in that
 * listing (at least a minimum length), and every command that takes an ID takes a unique prefix.
 * An intent ID is `deferred-turn:<sha256 hex>`: its short form is a prefix of the digest alone.
 */
export const INTENT_PREFIX = "deferred-turn:"
/** Hex digits of an intent digest shown at least (48 bits: a collision is very unlikely). */
export const INTENT_MIN = 12
/** Characters of a run ID shown at least: a generated ID's creation stamp (`20261201T213417Z`). */
export const RUN_MIN = 16

/** The shortest prefix of each ID, at least `min` long, that no other ID in `ids` shares. */
export const uniquePrefixes = (ids: ReadonlyArray<string>, min: number): ReadonlyMap<string, string> => {
  const sorted = [...new Set(ids)].sort()
  const common = (a: string | undefined, b: string) => {
    if (a === undefined) return 0
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    return i
  }
  const shortest = new Map<string, string>()
  sorted.forEach((id, i) => {
    const shared = Math.max(common(sorted[i - 1], id), common(sorted[i + 1], id))
    shortest.set(id, id.slice(0, Math.max(min, shared + 1)))
  })
  return shortest
}

const digestOf = (intentId: string) =>
  intentId.startsWith(INTENT_PREFIX) ? intentId.slice(INTENT_PREFIX.length) : intentId

/** Intent IDs as shown in a table: digest prefixes unique among `ids`. */
export const shortIntentIds = (ids: ReadonlyArray<string>): ((intentId: string) => string) => {
  const map = uniquePrefixes(ids.map(digestOf), INTENT_MIN)
  return (intentId) => map.get(digestOf(intentId)) ?? intentId
}

/** Run IDs as shown in a table: prefixes unique among `ids`. */
export const shortRunIds = (ids: ReadonlyArray<string>): ((runId: string) => string) => {
  const map = uniquePrefixes(ids, RUN_MIN)
  return (runId) => map.get(runId) ?? runId
}

/** The intent-ID prefixes a typed prefix stands for: itself, and a bare digest prefix with the kind in front. */
export const intentPrefixesOf = (typed: string): ReadonlyArray<string> =>
  /^[0-9a-f]+$/.test(typed) ? [typed, `${INTENT_PREFIX}${typed}`] : [typed]
