/**
 * Passive notifications in real Pi: a workflow that reports progress three times and completes
 * shows three progress notices and one final notice, and the model gets exactly the requests
 * (count and content) the same workflow makes without reporting anything.
 */
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../harness/mock-openai.ts"
import { customMessages } from "../harness/session-file.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import type { Lab } from "./lab.ts"
import { requestIdIn, startScenario } from "./support.ts"

const NOTIFICATION = "pi-workflows-notification"
const PRESENTATION = "pi-workflows-presentation"

// The same workflow twice: with and without progress reports. Reports are 1.1 s apart, so the
// one-per-second rate stores every one of them.
const report = (withProgress: boolean) => `const pause = () => new Promise((done) => setTimeout(done, 1100))
export default {
  name: "report",
  startAt: "work",
  nodes: {
    work: {
      type: "compute",
      run: async (ctx) => {
        ${withProgress ? 'await ctx.progress("1/3 collected"); await pause()' : ""}
        ${withProgress ? 'await ctx.progress("2/3 counted"); await pause()' : ""}
        ${withProgress ? 'await ctx.progress("3/3 written")' : ""}
        return { lines: 3 }
      }
    }
  },
  edges: [],
  presentation: ({ result }) => "The report has " + result.lines + " lines."
}
`

const script = [
  { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "report" } }] },
  { text: "Started." },
  { text: "Presented." }
]

/** What the model was sent, without the system prompt (it names the temp dir) and with IDs masked. */
const seen = (requests: ReadonlyArray<ChatRequest>): string =>
  JSON.stringify(requests.map((request) => request.messages.filter((m) => m.role !== "system")))
    .replace(/\d{8}T\d{6}Z-report-[0-9a-f]{8}/g, "<run>")
    .replace(/req-[0-9a-f-]{36}/g, "<request>")

const play = async (withProgress: boolean): Promise<Lab> => {
  const lab = await startScenario({ workflows: { "report.workflow.mjs": report(withProgress) }, script })
  await lab.say("make the report", {
    until: () => customMessages(lab.sessionFile, PRESENTATION).length === 1 && lab.mock.requestCount() === 3,
    label: "the presentation was answered"
  })
  return lab
}

const texts = (lab: Lab, customType: string) =>
  customMessages(lab.sessionFile, customType).map((m) => (typeof m.content === "string" ? m.content : ""))

describe("passive notifications in real Pi", () => {
  it("three progress notices and one final notice; the model's requests are those of a silent run", async () => {
    const loud = await play(true)
    const runId = loud.runs()[0]?.runId ?? ""
    expect(texts(loud, NOTIFICATION)).toEqual([
      `Workflow report (run ${runId}): 1/3 collected`,
      `Workflow report (run ${runId}): 2/3 counted`,
      `Workflow report (run ${runId}): 3/3 written`,
      `Workflow report (run ${runId}) completed after 1 step`
    ])
    const details = customMessages(loud.sessionFile, NOTIFICATION).map((m) => m.details)
    expect(details.map((d) => (d as { kind?: unknown }).kind)).toEqual([
      "progress",
      "progress",
      "progress",
      "final"
    ])
    // Recorded in the session, never read by the model. The final report is displayed in the
    // conversation; progress is the run's one footer line, replaced by each report and cleared
    // by the final one.
    expect(customMessages(loud.sessionFile, NOTIFICATION).map((m) => m.display)).toEqual([
      false,
      false,
      false,
      true
    ])
    const footer = loud.pi
      .events()
      .filter((record) => record.type === "extension_ui_request" && record.method === "setStatus")
      .map((record) => [record.statusKey, record.statusText ?? null])
    expect(footer).toEqual([
      [`pi-workflows:${runId}`, `… report (run ${runId}): 1/3 collected`],
      [`pi-workflows:${runId}`, `… report (run ${runId}): 2/3 counted`],
      [`pi-workflows:${runId}`, `… report (run ${runId}): 3/3 written`],
      [`pi-workflows:${runId}`, null]
    ])
    expect(loud.mock.requestsMentioning("collected")).toEqual([])
    expect(loud.mock.requestsMentioning(NOTIFICATION)).toEqual([])
    // The only intent is the completed run's terminal turn intent, which its presentation resolved.
    expect(loud.intents().map((i) => `${i.cause} → ${i.resolution ?? "pending"}`)).toEqual([
      "completed → presentation"
    ])

    const quiet = await play(false)
    expect(texts(quiet, NOTIFICATION)).toEqual([
      `Workflow report (run ${quiet.runs()[0]?.runId ?? ""}) completed after 1 step`
    ])
    expect(loud.mock.requestCount()).toBe(3)
    expect(quiet.mock.requestCount()).toBe(3)
    expect(seen(loud.mock.requests())).toEqual(seen(quiet.mock.requests()))
  }, 60_000)

  it("the progress tool action: a valid report is shown; oversized, unknown or late ones are tool errors that store nothing", async () => {
    const AGENT = `export default {
  name: "ask",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Answer {\\"ok\\": true}." } },
  edges: []
}
`
    let requestId = ""
    const progress = (text: string, request = () => requestId) => ({
      toolCalls: [{ name: "workflow", arguments: { action: "progress", requestId: request(), text } }]
    })
    const lab = await startScenario({
      workflows: { "ask.workflow.mjs": AGENT },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "ask" } }] },
        { text: "Started." },
        (request) => {
          const last = request.messages.at(-1)
          requestId = requestIdIn(
            typeof last?.content === "string" ? last.content : JSON.stringify(last?.content)
          )
          return progress("reading the question")
        },
        () => progress("x".repeat(2049)),
        () => progress("hi", () => "req-unknown"),
        () => ({
          toolCalls: [{ name: "workflow", arguments: { action: "submit", requestId, output: { ok: true } } }]
        }),
        () => progress("after the end"),
        { text: "Submitted." },
        { text: "Presented." }
      ]
    })
    await lab.say("ask me", {
      until: () =>
        customMessages(lab.sessionFile, PRESENTATION).length === 1 && lab.mock.requestCount() === 9,
      label: "the presentation was answered"
    })
    // start, progress, oversized, unknown request, submit, progress after the answer
    const results = lab.observe().toolResults
    expect(results.map((r) => r.isError)).toEqual([false, false, true, true, false, true])
    expect(results[2]?.text).toMatch(/2049 bytes; the limit is 2048 bytes/)
    expect(results[3]?.text).toMatch(/request req-unknown does not exist/)
    // The run may or may not have completed when the next request is answered; either way the
    // request is closed to progress.
    expect(results[5]?.text).toMatch(/has ended \(completed\); progress is closed|is no longer open/)
    const runId = lab.runs()[0]?.runId ?? ""
    expect(texts(lab, NOTIFICATION)).toEqual([
      `Workflow ask (run ${runId}): reading the question`,
      `Workflow ask (run ${runId}) completed after 1 step`
    ])
    // The refused reports stored nothing: one progress row and the final.
    expect(
      peekRows(lab.dbPath, "workflow_notifications", { orderBy: "rowid" }).map((row) => [
        row.kind,
        row.delivered_at !== null
      ])
    ).toEqual([
      ["progress", true],
      ["final", true]
    ])
  }, 60_000)
})
