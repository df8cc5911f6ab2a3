/**
 * Real Pi (RPC), step reminders: when the model's turn ends without the step's `submit`, the
 * extension reminds it (at most twice per step attempt), then tells the user once and goes
 * quiet. Never after Escape, a pause or a cancel; a kill after a reminder does not send that
 * reminder again. Judged by what the model got (its requests) and the session file.
 */
import { describe, expect, it } from "vitest"
import type { ChatRequest, Reply, ScriptStep } from "../harness/mock-openai.ts"
import { customContentText, customMessages } from "../harness/session-file.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import type { Lab } from "./lab.ts"
import { messageText, STEP } from "./lab.ts"
import { start, submit } from "./scenario.ts"
import { startScenario } from "./support.ts"
import { TRIAGE } from "./workflow-sources.ts"

const REMINDER = "pi-workflows-step-reminder"
const NOTIFICATION = "pi-workflows-notification"
const WORKFLOWS = { "triage.workflow.mjs": TRIAGE }
const PROMPT = "Label issue #42 with the triage workflow."
/** How long "nothing more happens" is watched for. */
const QUIET_MS = 3_000

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

interface ReminderView {
  readonly schema: unknown
  readonly runId: unknown
  readonly nodeId: unknown
  readonly attemptId: unknown
  readonly requestId: unknown
  readonly reminder: unknown
  readonly text: string
}

const record = (value: unknown): Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {}

/** The reminders in the session file, oldest first. */
const reminders = (lab: Lab): ReadonlyArray<ReminderView> =>
  customMessages(lab.sessionFile, REMINDER).map((entry) => {
    const d = record(entry.details)
    return {
      schema: d.schema,
      runId: d.runId,
      nodeId: d.nodeId,
      attemptId: d.attemptId,
      requestId: d.requestId,
      reminder: d.reminder,
      text: customContentText(entry)
    }
  })

/** The `workflow_step_reminders` rows as `attempt#ordinal` (3: the user's notice), oldest first. */
const taken = (lab: Lab): ReadonlyArray<string> =>
  peekRows(lab.dbPath, "workflow_step_reminders", { orderBy: "created_at, ordinal" }).map(
    (row) => `${String(row.attempt_id)}#${String(row.ordinal)}`
  )

/** The step prompts in the session file, as their details. */
const stepPrompts = (lab: Lab) => customMessages(lab.sessionFile, STEP).map((entry) => record(entry.details))

/** The user's "step waiting" notices in the session file. */
const waitingNotices = (lab: Lab) =>
  customMessages(lab.sessionFile, NOTIFICATION).filter(
    (entry) => record(entry.details).kind === "stepWaiting"
  )

const lastText = (request: ChatRequest | undefined) => messageText(request?.messages.at(-1))

/** Indexes of the model requests whose newest message is a step reminder. */
const reminderTurns = (lab: Lab): ReadonlyArray<number> =>
  lab.mock
    .requests()
    .filter((request) => lastText(request).startsWith("Reminder "))
    .map((request) => request.index)

/** The start, the start turn's text, then `after`: the first of them answers the step's prompt. */
const toStep = (...after: ReadonlyArray<ScriptStep>): ReadonlyArray<ScriptStep> => [
  start("triage"),
  { text: "The triage run is queued." },
  ...after
]

/** Nothing new reaches the model for `ms`. */
const staysQuiet = async (lab: Lab, ms = QUIET_MS) => {
  const before = lab.mock.requestCount()
  await sleep(ms)
  return lab.mock.requestCount() - before
}

const text = (t: string, delayMs?: number): Reply =>
  delayMs === undefined ? { text: t } : { text: t, delayMs }

const submitLabel = submit({ label: "bug" })

describe("step reminders in real Pi", () => {
  it("a step answered in plain text: exactly 2 reminders reach the model, then one notice, then quiet", async () => {
    const lab = await startScenario({
      workflows: WORKFLOWS,
      script: toStep(text("Looking at the issue."), text("Still reading."), text("Almost there."))
    })
    await lab.say(PROMPT, { until: () => waitingNotices(lab).length === 1, label: "the waiting notice" })
    expect(await staysQuiet(lab)).toBe(0)

    const requests = lab.mock.requests()
    expect(requests).toHaveLength(5)
    const [step] = stepPrompts(lab)
    const requestId = String(step?.requestId)
    expect(lastText(requests[2])).toContain('waiting for step "label"')
    expect(reminderTurns(lab)).toEqual([3, 4])
    expect(lastText(requests[3])).toMatch(/^Reminder 1 of 2: /)
    expect(lastText(requests[4])).toMatch(/^Reminder 2 of 2: /)
    for (const i of [3, 4]) {
      expect(lastText(requests[i])).toContain(`"action": "submit", "requestId": "${requestId}"`)
      expect(lastText(requests[i])).toContain("The step has no time limit.")
    }
    const [run] = lab.runs()
    const shown = reminders(lab)
    expect(shown.map((r) => r.reminder)).toEqual([1, 2])
    for (const r of shown) {
      expect(r).toMatchObject({
        schema: "pi-workflows.step-reminder.v1",
        runId: run?.runId,
        nodeId: "label",
        requestId
      })
    }
    expect(shown[0]?.attemptId).toBe(shown[1]?.attemptId)
    expect(typeof shown[0]?.attemptId).toBe("string")
    // The notice is the user's only: after the 2nd reminder's turn, never in a model request.
    const notices = waitingNotices(lab)
    expect(notices.map((notice) => notice.display)).toEqual([true])
    expect(notices.map(customContentText).join("")).toContain(`/workflow cancel ${run?.runId}`)
    // Each was taken in the store: reminder 1, reminder 2, the notice.
    const attempt = String(shown[0]?.attemptId)
    expect(taken(lab)).toEqual([`${attempt}#1`, `${attempt}#2`, `${attempt}#3`])
    expect(lab.runIn("running")).toBe(true)

    // A later turn of the user's that also ends without the submit: no 3rd reminder, no 2nd
    // notice, and the notice never reaches the model (display-only).
    await lab.say("Anything new?")
    expect(await staysQuiet(lab, 1_000)).toBe(0)
    expect(lab.mock.requestCount()).toBe(6)
    expect(lastText(lab.mock.requests()[5])).toBe("Anything new?")
    expect(lab.mock.requestsMentioning("reminders went unanswered")).toEqual([])
    expect(reminders(lab)).toHaveLength(2)
    expect(waitingNotices(lab)).toHaveLength(1)
  }, 60_000)

  it("a submit after reminder 1 completes the run: one presentation turn, no reminder 2", async () => {
    const lab = await startScenario({
      workflows: WORKFLOWS,
      script: toStep(text("Looking at the issue."), submitLabel, text("Submitted the label."), text("Done."))
    })
    await lab.say(PROMPT, { until: () => lab.runIn("completed"), label: "the run completed" })
    expect(await staysQuiet(lab)).toBe(0)

    const requests = lab.mock.requests()
    expect(requests).toHaveLength(6)
    expect(reminderTurns(lab)).toEqual([3])
    expect(reminders(lab).map((r) => r.reminder)).toEqual([1])
    expect(lastText(requests[5])).toContain("Workflow run ended")
    expect(customMessages(lab.sessionFile, "pi-workflows-presentation")).toHaveLength(1)
    expect(waitingNotices(lab)).toEqual([])
  }, 60_000)

  // The user stops reminder 1's turn: Escape holds the run, a cancel ends it; neither gets a
  // second reminder or the notice.
  const stops = [
    {
      name: "Escape during the reminder's turn: no further reminder, the run is held",
      stop: (lab: Lab) => lab.pi.abortLikeEscape(),
      state: "waiting",
      label: "the run is held",
      // The reminder's own request was cut off.
      closed: true
    },
    {
      name: "/workflow cancel during the reminder's turn: no further reminder or notice",
      stop: (lab: Lab) => lab.pi.prompt("/workflow cancel"),
      state: "cancelled",
      label: "the run is cancelled",
      closed: false
    }
  ] as const
  for (const { name, stop, state, label, closed } of stops) {
    it(name, async () => {
      const lab = await startScenario({
        workflows: WORKFLOWS,
        script: toStep(text("Looking at the issue."), text("Reading slowly…", 8_000), text("More text."))
      })
      const mark = lab.pi.mark()
      await lab.pi.prompt(PROMPT)
      await lab.waitUntil(() => lab.mock.requestCount() >= 4, "reminder 1's turn is in flight")
      await stop(lab)
      await lab.settle(mark, { until: () => lab.runIn(state), label })
      expect(await staysQuiet(lab)).toBe(0)

      expect(lab.mock.requestCount()).toBe(4)
      if (closed) expect(lab.mock.outcomes()[3]).toBe("clientClosed")
      expect(reminders(lab).map((r) => r.reminder)).toEqual([1])
      expect(waitingNotices(lab)).toEqual([])
    }, 60_000)
  }

  it("/workflow pause during the step's turn: the turn ends in text, no reminder", async () => {
    const lab = await startScenario({
      workflows: WORKFLOWS,
      script: toStep(text("Reading slowly…", 3_000), text("More text."))
    })
    const mark = lab.pi.mark()
    await lab.pi.prompt(PROMPT)
    await lab.waitUntil(() => lab.mock.requestCount() >= 3, "the step's turn is in flight")
    await lab.pi.prompt("/workflow pause")
    await lab.settle(mark, {
      until: () => lab.mock.outcomes()[2] !== undefined,
      label: "the step's turn ended"
    })
    expect(await staysQuiet(lab)).toBe(0)

    expect(lab.mock.outcomes()[2]).toBe("completed")
    expect(lab.mock.requestCount()).toBe(3)
    expect(reminders(lab)).toEqual([])
    expect(waitingNotices(lab)).toEqual([])
  }, 60_000)

  it("Pi killed after reminder 1: the restart never sends reminder 1 of that attempt again", async () => {
    const lab = await startScenario({
      workflows: WORKFLOWS,
      script: toStep(text("Looking at the issue."), text("Reading slowly…", 15_000))
    })
    await lab.pi.prompt(PROMPT)
    await lab.waitUntil(
      () => reminders(lab).length === 1 && lab.mock.requestCount() >= 4,
      "reminder 1 is in the session file and its turn is in flight"
    )
    const [first] = reminders(lab)
    await lab.pi.kill()
    // After the restart: the step again (a new attempt) in text, its reminder 1, then the submit.
    lab.mock.enqueue(text("Looking at the issue again."), submitLabel, text("Submitted."), text("Done."))
    const before = lab.mock.requestCount()
    await lab.resume()
    await lab.settle(0, { until: () => lab.runIn("completed"), label: "the run completed" })
    expect(await staysQuiet(lab)).toBe(0)

    expect(lab.mock.outcomes()[3]).toBe("clientClosed")
    const after = lab.mock.requests().slice(before)
    const shown = reminders(lab)
    const keys = shown.map((r) => `${String(r.attemptId)}#${String(r.reminder)}`)
    expect(new Set(keys).size).toBe(keys.length)
    // The restart re-prompted the step (a new attempt); that attempt got its own reminder 1.
    expect(after).toHaveLength(4)
    expect(lastText(after[0])).toContain('waiting for step "label"')
    const second = shown[1]
    expect(shown.map((r) => r.reminder)).toEqual([1, 1])
    expect(second?.attemptId).not.toBe(first?.attemptId)
    // Reminder 1 of the killed attempt was not sent again: not in the file, not to the model.
    expect(shown.filter((r) => r.attemptId === first?.attemptId)).toHaveLength(1)
    const remindedAfter = after.filter((request) => lastText(request).startsWith("Reminder "))
    expect(remindedAfter.map(lastText)).toEqual([second?.text])
    expect(second?.requestId).not.toBe(first?.requestId)
    expect(taken(lab)).toEqual([`${String(first?.attemptId)}#1`, `${String(second?.attemptId)}#1`])
  }, 90_000)
})
