/**
 * Real Pi, two sessions on one database: a run outlives its session and is adopted from a new
 * one. Session A starts a run and its model is on the step; `/workflow resume <runId>` in a new
 * session B is refused while A's Pi runs it (the session and the process are named). A quits
 * (the run is parked); B's `/workflow resume <runId>` adopts it: the step prompt arrives in B,
 * B's model submits, B gets the one presentation. Reopening A's session file sends nothing for
 * the run and starts no model request.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type ChatRequest, contentText, type MockOpenAI, startMockOpenAI } from "../harness/mock-openai.ts"
import { type PiRpc, startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox } from "../harness/pi-sandbox.ts"
import { customMessages } from "../harness/session-file.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { extensionEntry, requestIdIn } from "./lab.ts"

const GREET = `export default {
  name: "greet",
  startAt: "ask",
  nodes: { ask: { type: "agent", timeoutMs: 600000, prompt: "Say hello and submit {\\"greeting\\": string}." } },
  edges: []
}
`

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const lastText = (request: ChatRequest | undefined): string => contentText(request?.messages.at(-1)?.content)

const open = async (mock: MockOpenAI, db: string, prefix: string): Promise<PiRpc> => {
  const sandbox = createPiSandbox(mock.baseUrl, prefix)
  cleanups.push(() => sandbox.remove())
  const dir = join(sandbox.workDir, ".pi", "workflows")
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "greet.workflow.mjs"), GREET)
  const pi = await startPi({
    sandbox,
    extensionPath: extensionEntry(),
    env: { PI_WORKFLOWS_DB: db },
    timeoutMs: 15_000
  })
  cleanups.push(() => pi.dispose())
  return pi
}

/** The notices Pi showed after `mark`. */
const notices = (pi: PiRpc, mark = 0): ReadonlyArray<string> =>
  pi
    .eventsOfType("extension_ui_request", mark)
    .filter((record) => record.method === "notify")
    .map((record) => (typeof record.message === "string" ? record.message : ""))

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const until = async (check: () => boolean, what: string, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

describe("adopting a run from another session (real Pi)", () => {
  it("refused while A's Pi runs it; after A quits, B adopts: prompt, submit, one terminal turn in B; A silent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-adopt-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = join(dir, "controller.db")
    // A's model starts the run, then never answers the step while A lives (it stays on the turn).
    const mockA = await startMockOpenAI({
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "greet" } }] },
        { text: "Started." },
        { delayMs: 60_000, text: "Still thinking." }
      ]
    })
    cleanups.push(() => mockA.close())
    const mockB = await startMockOpenAI({
      script: [
        (request) => ({
          toolCalls: [
            {
              name: "workflow",
              arguments: {
                action: "submit",
                requestId: requestIdIn(lastText(request)),
                output: { greeting: "hi" }
              }
            }
          ]
        }),
        { text: "Submitted." },
        { text: "Presented." }
      ]
    })
    cleanups.push(() => mockB.close())

    const piA = await open(mockA, db, "pwt-adopt-a-")
    await piA.prompt("run the greet workflow")
    await mockA.waitForRequests(3, 15_000)
    const runId = String(peekRows(db, "workflow_runs")[0]?.run_id)
    const sessionA = String(peekRows(db, "workflow_runs")[0]?.target_session_id)

    // B, a new session of the project: the run is live in A's Pi, so it is refused, with the names.
    const piB = await open(mockB, db, "pwt-adopt-b-")
    const refusedMark = piB.mark()
    await piB.prompt(`/workflow resume ${runId}`)
    await until(() => notices(piB, refusedMark).length > 0, "B's refusal notice")
    const refusal = notices(piB, refusedMark).join("\n")
    expect(refusal).toContain(`is live in session ${sessionA}, run by Pi process ${String(piA.pid)}`)
    expect(peekRows(db, "workflow_runs")[0]?.target_session_id).toBe(sessionA)
    expect(mockB.requestCount()).toBe(0)

    // A quits mid-step (Pi stops the turn on its way out): no process holds the run now. B adopts it.
    await piA.stop()
    expect(peekRows(db, "workflow_runs")[0]?.claim_token).toBeNull()
    // Pi's quit aborted the step's turn just as Escape would: parked as shut down, not held.
    const parked = peekRows(db, "workflow_runs")[0]
    expect([parked?.state, parked?.parked_reason, parked?.pause_requested]).toEqual([
      "running",
      "shutdown",
      0
    ])
    const adoptMark = piB.mark()
    await piB.prompt(`/workflow resume ${runId}`)
    await until(() => notices(piB, adoptMark).some((n) => n.startsWith("Adopted run")), "B's adoption notice")
    expect(notices(piB, adoptMark).join("\n")).toContain(`from session ${sessionA}`)
    // The step prompt arrives in B; B's model submits; B gets the run's one terminal turn.
    await until(() => peekRows(db, "workflow_runs")[0]?.state === "completed", "the run completed in B")
    await piB.waitForQuiet({ timeoutMs: 30_000, quietMs: 500 })
    const fileB = piB.sessionFile ?? ""
    expect(customMessages(fileB, "pi-workflows-agent-step")).toHaveLength(1)
    expect(customMessages(fileB, "pi-workflows-presentation")).toHaveLength(1)
    expect(customMessages(fileB, "pi-workflows-deferred-turn")).toHaveLength(0)
    expect(mockB.requestCount()).toBe(3)
    const run = peekRows(db, "workflow_runs")[0]
    expect(run?.target_session_id).not.toBe(sessionA)
    expect(peekRows(db, "workflow_run_events").map((e) => e.kind)).toContain("adopted")
    expect(peekRows(db, "workflow_turn_intents").every((i) => i.target_session_id !== sessionA)).toBe(true)

    // A's session reopened: nothing for the run, no model request.
    const fileA = piA.sessionFile ?? ""
    const stepsInA = customMessages(fileA, "pi-workflows-agent-step").length
    const requestsA = mockA.requestCount()
    const reopened = await piA.restart()
    cleanups.push(() => reopened.dispose())
    await sleep(2_500)
    await reopened.waitForQuiet({ timeoutMs: 15_000, quietMs: 500, requireSettle: false })
    expect(mockA.requestCount()).toBe(requestsA)
    expect(customMessages(fileA, "pi-workflows-agent-step")).toHaveLength(stepsInA)
    expect(customMessages(fileA, "pi-workflows-presentation")).toHaveLength(0)
    expect(customMessages(fileA, "pi-workflows-deferred-turn")).toHaveLength(0)
    expect(customMessages(fileA, "pi-workflows-turn-trigger")).toHaveLength(0)
    expect(peekRows(db, "workflow_runs")[0]?.target_session_id).toBe(run?.target_session_id)
  }, 120_000)
})
