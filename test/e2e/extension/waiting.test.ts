/**
 * Real Pi (RPC), waiting checkpoints: a `wait` node sets its run `waiting` and sends one waiting
 * presentation (the question and the exact answer call) that starts a model turn. The model's
 * `workflow answer` or the user's `/workflow answer <runId> <text>` becomes the node's output and
 * the run goes on; a step timeout routed to a wait is answered by that one presentation (never also
 * a fallback); a restart while waiting sends nothing again and still takes the user's answer; a
 * wrong request ID is a tool error that changes nothing. Judged by what the model got (its
 * requests) and the session file; the database only as a second look.
 */
import { describe, expect, it } from "vitest"
import type { ChatMessage, ChatRequest, Reply, ScriptStep } from "../harness/mock-openai.ts"
import { type CustomMessageEntry, customContentText, customMessages } from "../harness/session-file.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { FALLBACK, type Lab, messageText, PRESENTATION, requestIdIn, STEP } from "./lab.ts"
import { start, submit } from "./scenario.ts"
import { startScenario } from "./support.ts"
import { APPROVAL, DEADLINE, ESCALATE, ESCALATE_CONFIRM } from "./workflow-sources.ts"

/** How long "nothing more happens" is watched for. */
const QUIET_MS = 2_000
const QUESTION = "Ship release 2.0 now? Answer yes or no."
/** Text every terminal-decision turn carries after the run's own presentation. */
const ENDED = "Workflow run ended"

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

const record = (value: unknown): Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {}

const presentations = (lab: Lab, waiting: boolean): ReadonlyArray<CustomMessageEntry> =>
  customMessages(lab.sessionFile, PRESENTATION).filter(
    (entry) => (record(entry.details).state === "waiting") === waiting
  )

/** The waiting presentations in the session file, oldest first. */
const waitingShown = (lab: Lab) => presentations(lab, true)
/** The presentations of an ended run (each starts the run's one terminal turn). */
const endShown = (lab: Lab) => presentations(lab, false)

const lastText = (request: ChatRequest | undefined) => messageText(request?.messages.at(-1))

/** Requests whose newest message is the run's terminal decision (its end presentation). */
const terminalTurns = (lab: Lab): ReadonlyArray<number> =>
  lab.mock
    .requests()
    .filter((request) => lastText(request).includes(ENDED))
    .map((request) => request.index)

/** Nothing reached the model or the session as a deferred-turn fallback. */
const noFallback = (lab: Lab) => {
  expect(customMessages(lab.sessionFile, FALLBACK)).toEqual([])
  expect(lab.mock.requestsMentioning("Workflow turn notice")).toEqual([])
}

/**
 * Give anything late the time to show (the tests then count every request and message), then
 * wait until Pi is idle.
 */
const quiet = async (lab: Lab) => {
  await sleep(QUIET_MS)
  await lab.pi.waitForQuiet({ quietMs: 300, timeoutMs: 15_000, requireSettle: false })
}

/** The request ID of the newest waiting presentation the model has in this request. */
const waitRequestIn = (request: ChatRequest): string => {
  const shown = request.messages.filter((m) => messageText(m).includes('{"action": "answer", "requestId"'))
  return requestIdIn(messageText(shown.at(-1)))
}

const answerCall = (requestId: string, answer: unknown): Reply => ({
  toolCalls: [{ name: "workflow", arguments: { action: "answer", requestId, answer } }]
})

/** The model answers the waiting presentation it has in front of it. */
const answer =
  (value: unknown): ScriptStep =>
  (request) =>
    answerCall(waitRequestIn(request), value)

/** The tool results (role `tool`) of one request, as text. */
const toolResults = (request: ChatRequest | undefined): ReadonlyArray<string> =>
  (request?.messages ?? []).filter((m: ChatMessage) => m.role === "tool").map(messageText)

const runRow = (lab: Lab) => peekRows(lab.dbPath, "workflow_runs")[0] ?? {}

/** The `workflow_requests` rows (the wait's request is one of them), oldest first. */
const requestRows = (lab: Lab) => peekRows(lab.dbPath, "workflow_requests", { orderBy: "opened_at" })

const waitRows = (lab: Lab) => peekRows(lab.dbPath, "workflow_waits", { orderBy: "since" })

/** The `workflow_steps` rows as `node:outcome`, in order. */
const stepOutcomes = (lab: Lab) =>
  peekRows(lab.dbPath, "workflow_steps", { orderBy: "seq" }).map(
    (row) => `${String(row.node_id)}:${String(row.outcome)}`
  )

const stepOutput = (lab: Lab, nodeId: string): unknown => {
  const row = peekRows(lab.dbPath, "workflow_steps", { where: "node_id = ?", params: [nodeId] })[0]
  return typeof row?.output_json === "string" ? JSON.parse(row.output_json) : undefined
}

/** One waiting presentation with the right details, and the text the model got for it. */
const expectOneWaiting = (lab: Lab, nodeId: string, question: string) => {
  const shown = waitingShown(lab)
  expect(shown).toHaveLength(1)
  const [entry] = shown
  const details = record(entry?.details)
  const run = lab.runs()[0]
  const requestId = String(details.requestId)
  expect(details).toMatchObject({ runId: run?.runId, nodeId, state: "waiting" })
  expect(requestId).toMatch(/^req/)
  expect(entry?.display).toBe(true)
  const text = entry === undefined ? "" : customContentText(entry)
  expect(text).toContain(question)
  expect(text).toContain(`{"action": "answer", "requestId": "${requestId}", "answer": `)
  expect(text).toContain(`/workflow answer ${String(run?.runId)} <text>`)
  return { requestId, text, runId: String(run?.runId), details }
}

/** The `ctx.ui.notify` texts Pi showed after `mark`. */
const noticesAfter = (lab: Lab, mark: number): ReadonlyArray<string> =>
  lab.pi
    .eventsOfType("extension_ui_request", mark)
    .filter((event) => event.method === "notify")
    .map((event) => String(event.message))

const PROMPT = "Ask me whether to ship release 2.0, then confirm."

describe("waiting checkpoints in real Pi", () => {
  it("the model answers with the tool: the next step quotes the answer, the run completes with one terminal turn", async () => {
    const lab = await startScenario({
      workflows: { "approval.workflow.mjs": APPROVAL },
      script: [
        start("approval"),
        { text: "The approval run is queued." },
        answer("yes"),
        { text: "Answered yes." },
        submit({ shipped: true }),
        { text: "Confirmed." },
        { text: "Release 2.0 is shipped." }
      ]
    })
    await lab.say(PROMPT, { until: () => lab.runIn("completed"), label: "the run completed" })
    await quiet(lab)

    const requests = lab.mock.requests()
    expect(requests).toHaveLength(7)
    // Request 2: the waiting presentation, exactly as the session file holds it.
    const { requestId, text, runId } = expectOneWaiting(lab, "ask", QUESTION)
    expect(lastText(requests[2])).toBe(text)
    // Request 3: the answer was accepted.
    const [accepted] = toolResults(requests[3]).slice(-1)
    expect(accepted).toContain(`Answer recorded for request ${requestId}`)
    // Request 4: the next step, with the answer in its text.
    const steps = customMessages(lab.sessionFile, STEP)
    expect(steps).toHaveLength(1)
    expect(record(steps[0]?.details)).toMatchObject({ runId, nodeId: "confirm" })
    expect(lastText(requests[4])).toContain('The release question was answered "yes". Confirm:')
    // Request 6: the one terminal turn, the completed run's presentation.
    expect(terminalTurns(lab)).toEqual([6])
    expect(lastText(requests[6])).toMatch(/^Release 2\.0: shipped\.\n\n---\nWorkflow run ended/)
    expect(endShown(lab).map((entry) => record(entry.details).state)).toEqual(["completed"])
    expect(waitingShown(lab)).toHaveLength(1)
    noFallback(lab)

    // The database agrees.
    expect(lab.runIn("completed")).toBe(true)
    expect(stepOutcomes(lab)).toEqual(["ask:ok", "confirm:ok"])
    expect(stepOutput(lab, "ask")).toEqual({ answer: "yes" })
    expect(waitRows(lab).map((row) => [row.request_id, row.answered_by])).toEqual([[requestId, "agent"]])
    expect(lab.intents().map((i) => `${i.cause} → ${i.resolution ?? "pending"}`)).toEqual([
      "completed → presentation"
    ])
  }, 60_000)

  // A step times out and its `timed_out` route leads to the wait: the waiting presentation is the
  // timeout's one successor. The model answers in the turn that presentation starts.
  const timeoutRows = [
    {
      name: "then an agent step",
      file: { "escalate-confirm.workflow.mjs": ESCALATE_CONFIRM },
      workflow: "escalate-confirm",
      after: [submit({ approved: true }), { text: "Confirmed." }] as ReadonlyArray<ScriptStep>,
      nodes: ["review:timed_out", "ask:ok", "confirm:ok"],
      requests: 8
    },
    {
      name: "then only compute nodes",
      file: { "escalate.workflow.mjs": ESCALATE },
      workflow: "escalate",
      after: [] as ReadonlyArray<ScriptStep>,
      nodes: ["review:timed_out", "ask:ok", "decide:ok"],
      // The answer ends the run inside the waiting presentation's own turn, before that
      // presentation's resolution of the timedOut intent is stored: the end still owes its own
      // terminal turn (the wait's write answered the abort; it was reused before that fix).
      requests: 6
    }
  ] as const
  for (const row of timeoutRows) {
    it(`a step times out into a wait, ${row.name}: the waiting presentation is the one successor (its intent), no fallback`, async () => {
      const lab = await startScenario({
        workflows: row.file,
        script: [
          start(row.workflow),
          { text: "The escalation run is queued." },
          { text: "Still reading the patch…", delayMs: 4_000 },
          answer("yes"),
          { text: "Answered yes." },
          ...row.after,
          { text: "The escalation is approved." }
        ]
      })
      await lab.say("Review the patch with the escalate workflow.", {
        until: () => lab.runIn("completed"),
        label: "the run completed"
      })
      await quiet(lab)

      const requests = lab.mock.requests()
      // The slow step turn was cut off by the step's 1 s limit.
      expect(lastText(requests[2])).toContain('waiting for step "review"')
      expect(lab.mock.outcomes()[2]).toBe("clientClosed")
      // Exactly one waiting presentation follows: it is the next thing the model gets.
      const { text, details, requestId } = expectOneWaiting(
        lab,
        "ask",
        "The review step timed out (timed out after 1s). Approve the patch anyway?"
      )
      expect(lastText(requests[3])).toBe(text)
      expect(toolResults(requests[4]).at(-1)).toContain(`Answer recorded for request ${requestId}`)
      // It carries the timedOut intent and resolved it: one message, never also a fallback.
      const [timedOut] = lab.intents()
      expect(timedOut).toMatchObject({ cause: "timedOut", nodeId: "review", resolution: "presentation" })
      expect(details.turnIntentId).toBe(timedOut?.intentId)
      noFallback(lab)
      expect(stepOutcomes(lab)).toEqual(row.nodes)
      expect(stepOutput(lab, "ask")).toEqual({ answer: "yes" })
      if (row.workflow === "escalate-confirm")
        expect(lastText(requests[5])).toContain('The escalation was answered "yes". Confirm:')

      // The run's end: exactly one terminal turn, the completed run's presentation.
      const ended = () => {
        expect(lab.mock.requestCount()).toBe(row.requests)
        expect(terminalTurns(lab)).toEqual([row.requests - 1])
        expect(lastText(lab.mock.requests()[row.requests - 1])).toMatch(
          /^Escalation finished: approved\.\n\n---\nWorkflow run ended/
        )
        expect(endShown(lab).map((entry) => record(entry.details).state)).toEqual(["completed"])
        expect(lab.intents().map((i) => `${i.cause} → ${i.resolution ?? "pending"}`)).toEqual([
          "timedOut → presentation",
          "completed → presentation"
        ])
      }
      ended()
      expect(waitingShown(lab)).toHaveLength(1)
      noFallback(lab)
    }, 60_000)
  }

  it("Pi restarted while the run waits: no second waiting presentation; the user's /workflow answer continues it", async () => {
    const lab = await startScenario({
      workflows: { "approval.workflow.mjs": APPROVAL },
      script: [
        start("approval"),
        { text: "The approval run is queued." },
        { text: "I will let you answer the release question." }
      ]
    })
    await lab.say(PROMPT, {
      until: () => waitingShown(lab).length === 1 && lab.mock.requestCount() === 3,
      label: "the waiting presentation's turn"
    })
    await quiet(lab)
    const { runId, text } = expectOneWaiting(lab, "ask", QUESTION)
    expect(lastText(lab.mock.requests()[2])).toBe(text)
    expect(lab.runIn("waiting")).toBe(true)
    // A waiting run gets no terminal-decision turn.
    expect(terminalTurns(lab)).toEqual([])

    await lab.stop()
    expect(lab.runIn("waiting")).toBe(true)
    await lab.resume()
    await lab.settle(0, { requireSettle: false })
    await quiet(lab)
    // The branch already holds the presentation: nothing was sent again, no model request.
    expect(lab.mock.requestCount()).toBe(3)
    expect(waitingShown(lab)).toHaveLength(1)
    expect(lab.runIn("waiting")).toBe(true)

    // The user answers in the restarted process: the step quotes it, the run completes.
    lab.mock.enqueue(submit({ shipped: true }), { text: "Confirmed." }, { text: "Release 2.0 is shipped." })
    const mark = lab.pi.mark()
    await lab.say(`/workflow answer ${runId} yes`, {
      until: () => lab.runIn("completed"),
      label: "the run completed"
    })
    await quiet(lab)
    const notices = noticesAfter(lab, mark)
    expect(notices.some((n) => n.startsWith(`Answered run ${runId} at ask`))).toBe(true)

    const requests = lab.mock.requests()
    expect(requests).toHaveLength(6)
    expect(lastText(requests[3])).toContain('The release question was answered "yes". Confirm:')
    // The slash command itself never reached the model.
    expect(lab.mock.requestsMentioning(`/workflow answer ${runId} yes`)).toEqual([])
    expect(terminalTurns(lab)).toEqual([5])
    expect(lastText(requests[5])).toMatch(/^Release 2\.0: shipped\./)
    expect(waitingShown(lab)).toHaveLength(1)
    expect(endShown(lab)).toHaveLength(1)
    noFallback(lab)
    expect(stepOutput(lab, "ask")).toEqual({ answer: "yes" })
    expect(waitRows(lab).map((row) => row.answered_by)).toEqual(["user"])
  }, 90_000)

  it("a wrong request ID is a tool error the model sees; the run still waits and the right answer then works", async () => {
    const WRONG = "req-not-the-right-one"
    const lab = await startScenario({
      workflows: { "approval.workflow.mjs": APPROVAL },
      script: [
        start("approval"),
        { text: "The approval run is queued." },
        answerCall(WRONG, "yes"),
        { text: "That answer was refused; I will wait." }
      ]
    })
    await lab.say(PROMPT, {
      until: () => lab.mock.requestCount() === 4 && lab.mock.outcomes()[3] === "completed",
      label: "the refused answer's turn ended"
    })
    await quiet(lab)

    const { requestId, runId } = expectOneWaiting(lab, "ask", QUESTION)
    const refused = lab.observe().toolResults.filter((result) => result.text.includes(WRONG))
    expect(refused.map((result) => result.isError)).toEqual([true])
    // The model's next request holds that tool result with the error text.
    const [seen] = toolResults(lab.mock.requests()[3]).slice(-1)
    expect(seen).toContain(WRONG)
    expect(seen).toContain("no waiting checkpoint has this request ID")
    expect(seen).not.toContain("Answer recorded")
    // Nothing changed: the run still waits for the same request.
    expect(runRow(lab)).toMatchObject({ state: "waiting", claim_token: null })
    expect(requestRows(lab).map((row) => [row.request_id, row.state])).toEqual([[requestId, "open"]])
    expect(waitRows(lab).map((row) => [row.request_id, row.answered_by])).toEqual([[requestId, null]])
    const mark = lab.pi.mark()
    await lab.say(`/workflow status ${runId}`, { requireSettle: false })
    // /workflow status shows its text in the status panel above the editor.
    const status = lab.pi
      .eventsOfType("extension_ui_request", mark)
      .filter((event) => event.method === "setWidget" && Array.isArray(event.widgetLines))
      .map((event) => (event.widgetLines as ReadonlyArray<unknown>).map(String).join("\n"))
      .join("\n")
    expect(status).toContain(`/workflow answer ${runId} <text> answers it`)
    expect(status).toContain(`Waiting since`)
    expect(lab.mock.requestCount()).toBe(4)

    // The user asks again; the model answers with the right request ID.
    lab.mock.enqueue(
      answer("yes"),
      { text: "Answered yes." },
      submit({ shipped: true }),
      { text: "Confirmed." },
      { text: "Release 2.0 is shipped." }
    )
    await lab.say("Answer the release question: yes.", {
      until: () => lab.runIn("completed"),
      label: "the run completed"
    })
    await quiet(lab)
    const requests = lab.mock.requests()
    expect(requests).toHaveLength(9)
    expect(toolResults(requests[5]).at(-1)).toContain(`Answer recorded for request ${requestId}`)
    expect(lastText(requests[6])).toContain('The release question was answered "yes". Confirm:')
    expect(terminalTurns(lab)).toEqual([8])
    expect(waitingShown(lab)).toHaveLength(1)
    expect(endShown(lab)).toHaveLength(1)
    noFallback(lab)
    expect(stepOutput(lab, "ask")).toEqual({ answer: "yes" })
  }, 60_000)

  it("nobody answers within the wait's limit: the outcome is timed_out, the run goes on and ends with one terminal turn", async () => {
    const lab = await startScenario({
      workflows: { "deadline.workflow.mjs": DEADLINE },
      script: [
        start("deadline"),
        { text: "The deadline run is queued." },
        { text: "I will leave the answer to you." },
        { text: "Nobody answered in time." }
      ]
    })
    await lab.say("Run the deadline workflow.", {
      until: () => lab.runIn("completed"),
      label: "the run completed"
    })
    await quiet(lab)

    const requests = lab.mock.requests()
    expect(requests).toHaveLength(4)
    const { text, runId, details } = expectOneWaiting(lab, "ask", "Answer within a second.")
    expect(lastText(requests[2])).toBe(text)
    expect(typeof details.deadlineAt).toBe("number")
    expect(text).toContain(`until ${new Date(Number(details.deadlineAt)).toISOString()}.`)
    expect(terminalTurns(lab)).toEqual([3])
    expect(lastText(requests[3])).toMatch(
      /^No answer in time \(timed out after 1s\)\.\n\n---\nWorkflow run ended/
    )
    expect(stepOutcomes(lab)).toEqual(["ask:timed_out", "late:ok"])
    noFallback(lab)

    // An answer after the limit is refused and changes nothing.
    const mark = lab.pi.mark()
    await lab.say(`/workflow answer ${runId} yes`, { requireSettle: false })
    expect(noticesAfter(lab, mark).join("\n")).toContain(
      `run ${runId} is not waiting for an answer (state completed)`
    )
    expect(lab.mock.requestCount()).toBe(4)
    expect(waitingShown(lab)).toHaveLength(1)
    expect(endShown(lab)).toHaveLength(1)
  }, 60_000)
})
