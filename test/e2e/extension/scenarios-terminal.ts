/**
 * Real-Pi chains of the terminal decision turn (docs/terminal-turns.md): the model restarts a
 * failed run from its terminal turn; the same failure twice; a chain that keeps failing
 * differently; the user's cancel. Judged by the model's requests, the session file (message
 * types and card details) and the database (runs, intents, launch rows).
 */
import { readFileSync } from "node:fs"
import type { ChatRequest, Reply } from "../harness/mock-openai.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { type Lab, messageText } from "./lab.ts"
import { lastMessageOf, type Scenario, start } from "./scenario.ts"
import { checkReminderTurns, reminderReplies, remindersDone } from "./scenarios-quiet.ts"
import { TRIAGE } from "./workflow-sources.ts"

// The first call fails with a temporary error; the next one completes.
const FLAKY = `let calls = 0
export default {
  name: "flaky",
  startAt: "fetch",
  nodes: {
    fetch: { type: "compute", run: () => { calls += 1; if (calls === 1) throw new Error("registry unreachable (temporary)"); return { fetched: calls } } }
  },
  edges: []
}
`

// Always the same failure.
const BROKEN = `export default {
  name: "broken",
  startAt: "build",
  nodes: { build: { type: "compute", run: () => { throw new Error("missing configuration file build.json") } } },
  edges: []
}
`

// A different failure every time: the chain makes progress until the limit.
const DRIFTING = `let calls = 0
export default {
  name: "drifting",
  startAt: "work",
  nodes: { work: { type: "compute", run: () => { calls += 1; throw new Error("stopped at item " + calls) } } },
  edges: []
}
`

/** The model restarts the run its terminal message names. */
const restartFromMessage = (request: ChatRequest): Reply => {
  const text = messageText(request.messages.at(-1))
  const match = /"action": "restart", "runId": "([^"]+)"/.exec(text) ?? /- run: (\S+)/.exec(text)
  if (match?.[1] === undefined) throw new Error(`no run to restart in: ${text.slice(0, 300)}`)
  return { toolCalls: [{ name: "workflow", arguments: { action: "restart", runId: match[1] } }] }
}

interface StoredMessage {
  readonly customType: string
  readonly details: Readonly<Record<string, unknown>>
}

/** The custom messages of the session file with their details. */
const storedMessages = (lab: Lab): ReadonlyArray<StoredMessage> =>
  readFileSync(lab.sessionFile, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .flatMap((line): StoredMessage[] => {
      const entry: unknown = JSON.parse(line)
      if (typeof entry !== "object" || entry === null) return []
      if (Reflect.get(entry, "type") !== "custom_message") return []
      const customType: unknown = Reflect.get(entry, "customType")
      const details: unknown = Reflect.get(entry, "details")
      // Passive notifications (progress, final) are for the user's eyes, not terminal turns.
      return typeof customType === "string" &&
        customType !== "pi-workflows-notification" &&
        typeof details === "object" &&
        details !== null
        ? [{ customType, details: { ...details } }]
        : []
    })

const launches = (lab: Lab) => peekRows(lab.dbPath, "workflow_run_launches", { orderBy: "created_at" })

const say = (lab: Lab, text: string, runs: number, state: string) =>
  lab.say(text, {
    until: () => {
      const seen = lab.observe().runs
      return seen.length === runs && seen.every((run) => run.state === state || run.state === "completed")
    },
    label: `${runs} runs ended`
  })

export const restartOnce: Scenario = {
  id: "terminal-restart-once",
  title: "a failed run: the model restarts once from its terminal turn; the second run completes",
  interruption: "terminal turn (failed → restart)",
  workflows: { "flaky.workflow.mjs": FLAKY },
  script: [
    start("flaky"),
    { text: "The flaky run is queued." },
    restartFromMessage,
    { text: "Restarted; it starts after this turn." },
    { text: "The fetch completed; the task is done." }
  ],
  expected: {
    requests: 5,
    steps: 0,
    presentations: 1,
    fallbacks: 1,
    intents: ["failed → fallback", "completed → presentation"],
    runs: ["failed", "completed"]
  },
  play: async (lab) => {
    await lab.say("Fetch the package index with the flaky workflow.", {
      until: () =>
        JSON.stringify(lab.observe().runs.map((run) => run.state)) === '["failed","completed"]' &&
        lab.mock.requestCount() >= 5,
      label: "the restarted run completed and was presented"
    })
  },
  verify: (observation, lab, check) => {
    check(
      "the 3rd request is the terminal decision",
      lastMessageOf(lab, 2).includes("Decide what happens next")
    )
    const restart = observation.toolResults[1]
    check(
      "restart was accepted",
      restart?.isError === false && restart.text.startsWith("Restarted as run"),
      restart?.text
    )
    check(
      "the 5th request is the presentation with the decision",
      lastMessageOf(lab, 4).includes("Default: stop")
    )
    const cards = storedMessages(lab).map((m) => [m.customType, m.details.reasonKind, m.details.restartCount])
    check(
      "one terminal message per run, with card fields",
      JSON.stringify(cards) ===
        JSON.stringify([
          ["pi-workflows-deferred-turn", "failed", 0],
          ["pi-workflows-presentation", "completed", 1]
        ]),
      JSON.stringify(cards)
    )
    const rows = launches(lab)
    check(
      "one launch row: the restart of the first run, from its terminal turn",
      rows.length === 1 &&
        rows[0]?.kind === "restart" &&
        rows[0]?.parent_run_id === observation.runs[0]?.runId &&
        rows[0]?.terminal_run_id === observation.runs[0]?.runId,
      JSON.stringify(rows)
    )
  }
}

export const sameFailureTwice: Scenario = {
  id: "terminal-same-failure",
  title: "the same failure twice: the second restart is refused",
  interruption: "terminal turn (repeated failure)",
  workflows: { "broken.workflow.mjs": BROKEN },
  script: [
    start("broken"),
    { text: "Queued." },
    restartFromMessage,
    { text: "Restarted." },
    restartFromMessage,
    { text: "The same failure repeated; stopping and asking the user about build.json." }
  ],
  expected: {
    requests: 6,
    steps: 0,
    presentations: 0,
    fallbacks: 2,
    intents: ["failed → fallback", "failed → fallback"],
    runs: ["failed", "failed"]
  },
  play: async (lab) => {
    await say(lab, "Build with the broken workflow.", 2, "failed")
    await lab.waitUntil(() => lab.mock.requestCount() >= 6, "the model answered the refusal")
  },
  verify: (observation, _lab, check) => {
    const refused = observation.toolResults[2]
    check(
      "the second restart is a tool error naming the repeat",
      refused?.isError === true && refused.text.includes("ended exactly as earlier run"),
      refused?.text
    )
  }
}

export const changingFailures: Scenario = {
  id: "terminal-four-runs",
  title: "failures that change each time: the chain stops at four runs",
  interruption: "terminal turn (restart limit)",
  workflows: { "drifting.workflow.mjs": DRIFTING },
  script: [
    start("drifting"),
    { text: "Queued." },
    restartFromMessage,
    { text: "Restart 1." },
    restartFromMessage,
    { text: "Restart 2." },
    restartFromMessage,
    { text: "Restart 3." },
    restartFromMessage,
    { text: "The restart limit is reached; stopping." }
  ],
  expected: {
    requests: 10,
    steps: 0,
    presentations: 0,
    fallbacks: 4,
    intents: ["failed → fallback", "failed → fallback", "failed → fallback", "failed → fallback"],
    runs: ["failed", "failed", "failed", "failed"]
  },
  play: async (lab) => {
    await say(lab, "Process the items with the drifting workflow.", 4, "failed")
    await lab.waitUntil(() => lab.mock.requestCount() >= 10, "the model answered the refusal")
  },
  verify: (observation, _lab, check) => {
    const refused = observation.toolResults[4]
    check(
      "the fourth restart is refused at the limit",
      refused?.isError === true && refused.text.includes("already has 3 of 3 restarts"),
      refused?.text
    )
  }
}

export const userCancelQuiet: Scenario = {
  id: "terminal-user-cancel",
  title: "the user cancels: no turn follows, and restart is refused later",
  interruption: "user /workflow cancel",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued." },
    { text: "Looking at issue #42 first." },
    ...reminderReplies,
    (request) => {
      const text = messageText(request.messages.at(-1))
      const runId = /run (\S+) now/.exec(text)?.[1] ?? "unknown"
      return { toolCalls: [{ name: "workflow", arguments: { action: "restart", runId } }] }
    },
    { text: "The run was cancelled by you, so I will not restart it." }
  ],
  // The step turn ends in text: its two reminders follow (requests 3 and 4), then the notice.
  expected: { requests: 7, steps: 1, presentations: 0, fallbacks: 0, intents: [], runs: ["cancelled"] },
  play: async (lab, check) => {
    await lab.say("Label issue #42 with the triage workflow.", {
      until: () => remindersDone(lab, 5),
      label: "the step turn and its two reminders ran, then the notice"
    })
    checkReminderTurns(lab, check, 3)
    const before = lab.mock.requestCount()
    await lab.say("/workflow cancel", { until: () => lab.runIn("cancelled"), requireSettle: false })
    check("no model request after /workflow cancel", lab.mock.requestCount() === before)
    const runId = lab.observe().runs[0]?.runId ?? "?"
    await lab.say(`Restart run ${runId} now`, {
      until: () => lab.mock.requestCount() >= 7,
      label: "the model answered"
    })
  },
  verify: (observation, _lab, check) => {
    const refused = observation.toolResults.at(-1)
    check(
      "restart of a user-cancelled run is a tool error",
      refused?.isError === true && refused.text.includes("the user cancelled this run"),
      refused?.text
    )
  }
}

export const userStartFails: Scenario = {
  id: "terminal-user-start",
  title: "a run the user started with /workflow start fails: the model gets its terminal turn",
  interruption: "terminal turn (user-started run)",
  workflows: { "broken.workflow.mjs": BROKEN },
  script: [{ text: "The build you started failed: build.json is missing. Shall I create it?" }],
  expected: {
    requests: 1,
    steps: 0,
    presentations: 0,
    fallbacks: 1,
    intents: ["failed → fallback"],
    runs: ["failed"]
  },
  play: async (lab) => {
    await lab.say("/workflow start broken", {
      until: () => lab.intentsResolved(1) && lab.mock.requestCount() >= 1,
      label: "the terminal turn ran",
      requireSettle: false
    })
  },
  verify: (_observation, lab, check) => {
    check(
      "the one request is the terminal decision",
      lastMessageOf(lab, 0).includes("Decide what happens next")
    )
  }
}

export const terminalScenarios: ReadonlyArray<Scenario> = [
  userStartFails,
  restartOnce,
  sameFailureTwice,
  changingFailures,
  userCancelQuiet
]
