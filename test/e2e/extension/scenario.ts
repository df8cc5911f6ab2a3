/**
 * What a real-Pi scenario is and how one is judged: the workflow files and scripted model
 * answers, a play (what the user does), the exact expected outcome (model requests, successor
 * messages in the session file, turn intents with their resolution path, run states) and extra
 * named checks. `runScenario` plays one in a fresh lab and never throws.
 */
import type { ScriptStep } from "../harness/mock-openai.ts"
import { FALLBACK, Lab, type LabOptions, messageText, PRESENTATION, requestIdOf, STEP } from "./lab.ts"
import type { Observation } from "./observation.ts"

/** What a scenario must produce, in numbers and resolution paths. */
export interface Summary {
  readonly requests: number
  readonly steps: number
  readonly presentations: number
  readonly fallbacks: number
  /** One entry per `workflow_turn_intents` row: `cause → resolution` (`pending` if unresolved). */
  readonly intents: ReadonlyArray<string>
  /** The state of each run, oldest first. */
  readonly runs: ReadonlyArray<string>
}

/** Record one named fact during or after the play; a false `ok` fails the scenario. */
export type Check = (what: string, ok: boolean, detail?: string) => void

export interface Scenario {
  readonly id: string
  readonly title: string
  /** What interrupts the workflow (the demo's table). */
  readonly interruption: string
  readonly workflows: Readonly<Record<string, string>>
  readonly script: ReadonlyArray<ScriptStep>
  readonly expected: Summary
  readonly play: (lab: Lab, check: Check) => Promise<void>
  readonly verify?: (observation: Observation, lab: Lab, check: Check) => void
}

const count = (observation: Observation, customType: string) =>
  observation.messages.filter((message) => message.customType === customType).length

export const summarize = (observation: Observation): Summary => ({
  requests: observation.requests.length,
  steps: count(observation, STEP),
  presentations: count(observation, PRESENTATION),
  fallbacks: count(observation, FALLBACK),
  intents: observation.intents.map((intent) => `${intent.cause} → ${intent.resolution ?? "pending"}`),
  runs: observation.runs.map((run) => run.state)
})

export const start = (workflow: string, input?: unknown): ScriptStep => ({
  toolCalls: [
    {
      name: "workflow",
      arguments: input === undefined ? { action: "start", workflow } : { action: "start", workflow, input }
    }
  ]
})

export const submit =
  (output: unknown): ScriptStep =>
  (request) => ({
    toolCalls: [
      { name: "workflow", arguments: { action: "submit", requestId: requestIdOf(request), output } }
    ]
  })

/** The full text of the newest message of request `index` (what started that model turn). */
export const lastMessageOf = (lab: Lab, index: number): string =>
  messageText(lab.mock.requests()[index]?.messages.at(-1))

/**
 * The scenario's first intent is carried by exactly one message (the `what` message), and no
 * intent ID is carried twice (a completed run's own terminal turn intent, resolved by its
 * presentation, may follow).
 */
export const oneIntentResolvedBy = (observation: Observation, check: Check, what: string) => {
  const intent = observation.intents[0]
  const carriers = observation.messages.filter((m) => m.turnIntentId !== null)
  const own = carriers.filter((m) => m.turnIntentId === intent?.intentId)
  const ids = new Set(carriers.map((m) => m.turnIntentId))
  check(
    `the ${what} message carries the intent's ID`,
    intent !== undefined && own.length === 1 && ids.size === carriers.length,
    carriers.map((m) => `${m.customType}:${m.turnIntentId ?? ""}`).join(", ")
  )
}

export interface CheckResult {
  readonly what: string
  readonly ok: boolean
  readonly detail: string | undefined
}

export interface ScenarioResult {
  readonly scenario: Scenario
  readonly durationMs: number
  readonly observation: Observation | null
  readonly summary: Summary | null
  readonly checks: ReadonlyArray<CheckResult>
  /** Empty when the scenario behaved. */
  readonly failures: ReadonlyArray<string>
}

const summaryDiff = (actual: Summary, expected: Summary): ReadonlyArray<string> =>
  (Object.keys(expected) as Array<keyof Summary>).flatMap((key) => {
    const a = JSON.stringify(actual[key])
    const e = JSON.stringify(expected[key])
    return a === e ? [] : [`${key}: expected ${e}, got ${a}`]
  })

/** Well below the coordinator's periodic pass (10 s): an owed fallback must not wait for it. */
const PROMPT_FALLBACK_MS = 5_000

/**
 * Play one scenario in a fresh lab and judge it. Never throws: a failed play is a failure.
 * `extension` picks where Pi loads the extension from (default: this checkout's entry).
 */
export const runScenario = async (
  scenario: Scenario,
  extension?: LabOptions["extension"],
  options: { readonly keepDbAs?: string } = {}
): Promise<ScenarioResult> => {
  const started = performance.now()
  const checks: Array<CheckResult> = []
  const check: Check = (what, ok, detail) => {
    checks.push({ what, ok, detail })
  }
  const failures: Array<string> = []
  let observation: Observation | null = null
  let summary: Summary | null = null
  let lab: Lab | undefined
  try {
    lab = await Lab.open({
      workflows: scenario.workflows,
      script: scenario.script,
      ...(extension === undefined ? {} : { extension })
    })
    await scenario.play(lab, check)
    observation = lab.observe()
    summary = summarize(observation)
    failures.push(...summaryDiff(summary, scenario.expected))
    scenario.verify?.(observation, lab, check)
    for (const intent of observation.intents) {
      if (intent.resolution !== "fallback" || intent.eligibleAt === null || intent.resolvedAt === null)
        continue
      const waited = Date.parse(intent.resolvedAt) - Date.parse(intent.eligibleAt)
      check(
        "the fallback went out promptly, not on the periodic pass",
        waited < PROMPT_FALLBACK_MS,
        `${waited} ms from eligible to resolved`
      )
    }
  } catch (error) {
    failures.push(`play failed: ${error instanceof Error ? error.message : String(error)}`)
  } finally {
    await lab?.close(options)
  }
  for (const c of checks)
    if (!c.ok) failures.push(`check failed: ${c.what}${c.detail === undefined ? "" : ` (${c.detail})`}`)
  return { scenario, durationMs: performance.now() - started, observation, summary, checks, failures }
}
