/**
 * Scenarios that owe no automatic turn beyond the workflow's own messages: a completed run, the
 * user's direct cancel or Escape, a shutdown, rejected input, a broken workflow file.
 */
import type { ScriptStep } from "../harness/mock-openai.ts"
import { customContentText, customMessages } from "../harness/session-file.ts"
import type { Lab } from "./lab.ts"
import { type Check, lastMessageOf, type Scenario, start, submit } from "./scenario.ts"
import { GREET, GUARDED, RELEASE_NOTES, TRIAGE } from "./workflow-sources.ts"

const REMINDER = "pi-workflows-step-reminder"
const NOTIFICATION = "pi-workflows-notification"

/**
 * The model's plain-text answers to the two step reminders that follow a step turn ending
 * without its `submit` (docs/extension.md "Step reminders").
 */
export const reminderReplies: ReadonlyArray<ScriptStep> = [
  { text: "Still reading issue #42; no label yet." },
  { text: "I need more time before I submit a label." }
]

/** The user's "step waiting" notices in the session file (display-only, after reminder 2). */
const waitingNotices = (lab: Lab) =>
  customMessages(lab.sessionFile, NOTIFICATION).filter((entry) => {
    const details: unknown = entry.details
    return typeof details === "object" && details !== null && Reflect.get(details, "kind") === "stepWaiting"
  })

/** The step's reminders are over: `requests` model requests so far and the user's one notice. */
export const remindersDone = (lab: Lab, requests: number): boolean =>
  lab.mock.requestCount() >= requests && waitingNotices(lab).length === 1

/**
 * Requests `first` and `first + 1` are the step's two reminders: the newest message of each is
 * the `pi-workflows-step-reminder` of the session file (1, then 2), and the one notice that
 * follows is display-only and reached no model request.
 */
export const checkReminderTurns = (lab: Lab, check: Check, first: number): void => {
  const shown = customMessages(lab.sessionFile, REMINDER)
  const got = [lastMessageOf(lab, first), lastMessageOf(lab, first + 1)]
  check(
    `requests ${first} and ${first + 1} are the step's two reminders`,
    shown.length === 2 &&
      shown.every((entry, i) => customContentText(entry) === got[i]) &&
      /^Reminder 1 of 2: /.test(got[0] ?? "") &&
      /^Reminder 2 of 2: /.test(got[1] ?? ""),
    got.map((text) => text.split("\n")[0]).join(" | ")
  )
  const notices = waitingNotices(lab)
  check(
    "then one display-only notice for the user, never sent to the model",
    notices.length === 1 &&
      notices[0]?.display === true &&
      lab.mock.requestsMentioning("reminders went unanswered").length === 0,
    String(notices.length)
  )
}

export const completedRun: Scenario = {
  id: "completed",
  title: "a run completes: its presentation is the only successor",
  interruption: "none (completed)",
  workflows: { "release-notes.workflow.mjs": RELEASE_NOTES },
  script: [
    start("release-notes", { version: "1.4.0" }),
    { text: "The release notes run is queued." },
    submit({ notes: ["Faster startup", "Fix a crash on resume"] }),
    { text: "Submitted the draft." },
    { text: "Release notes are done." }
  ],
  expected: {
    requests: 5,
    steps: 1,
    presentations: 1,
    fallbacks: 0,
    intents: ["completed → presentation"],
    runs: ["completed"]
  },
  play: async (lab) => {
    await lab.say("Write release notes for 1.4.0.", {
      until: () => lab.runIn("completed"),
      label: "the run completed"
    })
  },
  verify: (_observation, lab, check) => {
    check(
      "the presentation is the workflow's own text, then the terminal decision",
      lastMessageOf(lab, 4).startsWith(
        "Release notes for 1.4.0 are ready (2 entries).\n\n---\nWorkflow run ended"
      ),
      lastMessageOf(lab, 4)
    )
  }
}

export const directCancel: Scenario = {
  id: "direct-cancel",
  title: "the user cancels with /workflow cancel: no model turn follows",
  interruption: "user /workflow cancel",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued." },
    { text: "Looking at issue #42 first." },
    ...reminderReplies
  ],
  // The step turn ends in text: its two reminders follow (requests 3 and 4), then the notice.
  expected: { requests: 5, steps: 1, presentations: 0, fallbacks: 0, intents: [], runs: ["cancelled"] },
  play: async (lab, check) => {
    await lab.say("Label issue #42 with the triage workflow.", {
      until: () => remindersDone(lab, 5),
      label: "the step turn and its two reminders ran, then the notice"
    })
    checkReminderTurns(lab, check, 3)
    const before = lab.mock.requestCount()
    await lab.say("/workflow cancel", { until: () => lab.runIn("cancelled"), requireSettle: false })
    check("no model request after /workflow cancel", lab.mock.requestCount() === before)
  },
  verify: (observation, _lab, check) => {
    check(
      "the user saw the cancellation",
      observation.notices.some((text) => text.startsWith("Cancelled run")),
      observation.notices.join(" | ")
    )
  }
}

export const escapeHold: Scenario = {
  id: "escape",
  title: "the user presses Escape during a step turn: the run is held until /workflow resume",
  interruption: "user Escape",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued." },
    { text: "Reading the issue…", delayMs: 5_000 },
    submit({ label: "bug" }),
    { text: "Submitted the label." },
    { text: "Issue #42 is labelled." }
  ],
  expected: {
    requests: 6,
    steps: 2,
    presentations: 1,
    fallbacks: 0,
    intents: ["completed → presentation"],
    runs: ["completed"]
  },
  play: async (lab, check) => {
    const mark = lab.pi.mark()
    await lab.pi.prompt("Label issue #42 with the triage workflow.")
    await lab.waitUntil(() => lab.mock.requestCount() >= 3, "the step turn is in flight")
    await lab.pi.abortLikeEscape()
    await lab.settle(mark, { until: () => lab.runIn("waiting"), label: "the run is held" })
    check("Escape: the run is held (waiting)", lab.runIn("waiting"))
    check("Escape: no automatic turn", lab.mock.requestCount() === 3, String(lab.mock.requestCount()))
    check("Escape: no intent", lab.intents().length === 0)
    await lab.say("/workflow resume", { until: () => lab.runIn("completed"), label: "the run completed" })
  },
  verify: (observation, lab, check) => {
    check("the step turn was aborted by Escape", lab.mock.outcomes()[2] === "clientClosed")
    check("resume sent the step again", lastMessageOf(lab, 3).includes('waiting for step "label"'))
    const held = observation.notices.filter((text) => text.includes("is on hold after Escape"))
    check(
      "one notice told the user the run is held and how to resume or cancel it",
      held.length === 1 &&
        held[0]?.includes("/workflow resume continues it") === true &&
        held[0]?.includes("/workflow cancel stops it") === true,
      observation.notices.join(" | ")
    )
  }
}

export const cancelDuringStep: Scenario = {
  id: "cancel-during-step",
  title: "the user cancels with /workflow cancel while the model works on the step: that turn stops too",
  interruption: "user /workflow cancel during the step turn",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued." },
    { text: "Reading the issue…", delayMs: 5_000 }
  ],
  expected: { requests: 3, steps: 1, presentations: 0, fallbacks: 0, intents: [], runs: ["cancelled"] },
  play: async (lab, check) => {
    const mark = lab.pi.mark()
    await lab.pi.prompt("Label issue #42 with the triage workflow.")
    await lab.waitUntil(() => lab.mock.requestCount() >= 3, "the step turn is in flight")
    await lab.pi.prompt("/workflow cancel")
    await lab.settle(mark, { until: () => lab.runIn("cancelled"), label: "the run is cancelled" })
    check(
      "no model request after /workflow cancel",
      lab.mock.requestCount() === 3,
      String(lab.mock.requestCount())
    )
  },
  verify: (observation, lab, check) => {
    check("the step turn was stopped (its model request closed)", lab.mock.outcomes()[2] === "clientClosed")
    check(
      "the reply says the model's turn was stopped too",
      observation.notices.some((text) => text.includes("The model's turn on its step was stopped too")),
      observation.notices.join(" | ")
    )
  }
}

export const shutdownResume: Scenario = {
  id: "shutdown",
  title: "Pi shuts down during a step: the run is parked quietly and resumed at the next start",
  interruption: "Pi shutdown",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued." },
    { text: "Looking at issue #42 first." },
    ...reminderReplies,
    submit({ label: "feature" }),
    { text: "Submitted the label." },
    { text: "Issue #42 is labelled." }
  ],
  // The step turn ends in text: its two reminders follow (requests 3 and 4), then the notice;
  // after the restart, the step again (request 5) and the run's own turns.
  expected: {
    requests: 8,
    steps: 2,
    presentations: 1,
    fallbacks: 0,
    intents: ["completed → presentation"],
    runs: ["completed"]
  },
  play: async (lab, check) => {
    await lab.say("Label issue #42 with the triage workflow.", {
      until: () => remindersDone(lab, 5),
      label: "the step turn and its two reminders ran, then the notice"
    })
    checkReminderTurns(lab, check, 3)
    await lab.stop()
    check("shutdown: no model request", lab.mock.requestCount() === 5, String(lab.mock.requestCount()))
    check("shutdown: no intent", lab.intents().length === 0)
    check("shutdown: the run is not ended", lab.runIn("running"), lab.runs()[0]?.state)
    await lab.resume()
    await lab.settle(0, { until: () => lab.runIn("completed"), label: "the run completed" })
  },
  verify: (_observation, lab, check) => {
    check("the restart sent the step again", lastMessageOf(lab, 5).includes('waiting for step "label"'))
    check(
      "no reminder after the restart (the new attempt's step was submitted)",
      customMessages(lab.sessionFile, REMINDER).length === 2
    )
  }
}

export const invalidInput: Scenario = {
  id: "invalid-input",
  title: "invalid tool input is a tool error in the current turn: no run, no intent",
  interruption: "none (rejected start)",
  workflows: { "guarded.workflow.mjs": GUARDED },
  script: [
    { toolCalls: [{ name: "workflow", arguments: { action: "start" } }] },
    start("guarded", { ticket: 42 }),
    { text: "I could not start the workflow." }
  ],
  expected: { requests: 3, steps: 0, presentations: 0, fallbacks: 0, intents: [], runs: [] },
  play: async (lab) => {
    await lab.say("Start the guarded workflow.")
  },
  verify: (observation, _lab, check) => {
    const [missing, rejected] = observation.toolResults
    check(
      "a start without a name is a tool error naming the field",
      missing?.isError === true && missing.text === "workflow start: workflow is missing",
      missing?.text
    )
    check(
      "input the workflow rejects is a tool error with its message",
      rejected?.isError === true && rejected.text.includes("input needs {ticket: string}"),
      rejected?.text
    )
  }
}

export const brokenFile: Scenario = {
  id: "broken-file",
  title: "a broken workflow file is reported by name; the other workflow still works",
  interruption: "none (load error)",
  workflows: {
    "a-broken.workflow.mjs": "export default { name: 'broken', startAt: \n",
    "b-invalid.workflow.mjs":
      'export default { name: "invalid", startAt: "nowhere", nodes: {}, edges: [] }\n',
    "greet.workflow.mjs": GREET
  },
  script: [
    { toolCalls: [{ name: "workflow", arguments: { action: "list" } }] },
    start("greet"),
    { text: "The greeting run is queued." },
    submit({ greeting: "hello" }),
    { text: "Submitted." },
    { text: "Greeted." }
  ],
  expected: {
    requests: 6,
    steps: 1,
    presentations: 1,
    fallbacks: 0,
    intents: ["completed → presentation"],
    runs: ["completed"]
  },
  play: async (lab) => {
    await lab.say("Greet me with a workflow.", {
      until: () => lab.runIn("completed"),
      label: "the run completed"
    })
  },
  verify: (observation, _lab, check) => {
    const errors = observation.notices.filter((text) => text.startsWith("workflow load error"))
    check(
      "the syntax error names its file",
      errors.some((text) => text.includes("a-broken.workflow.mjs")),
      errors.join(" | ")
    )
    check(
      "the invalid definition names its file",
      errors.some((text) => text.includes("b-invalid.workflow.mjs"))
    )
    const list = observation.toolResults[0]?.text ?? ""
    check("list shows only the good workflow", list.includes("greet") && !list.includes("broken"), list)
  }
}
