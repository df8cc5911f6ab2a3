/**
 * Real Pi, two processes on one database: session B's model cannot cancel session A's run.
 * A's model works on the run's step (its reply is held for a while); meanwhile B's model calls
 * `workflow cancel` with A's run ID. B's tool reply is the refusal; A's turn is not stopped, A's
 * model submits, the run completes and A never hears that "the agent cancelled" it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type ChatRequest, contentText, type MockOpenAI, startMockOpenAI } from "../harness/mock-openai.ts"
import { type PiRpc, startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../harness/pi-sandbox.ts"
import { customContentText, customMessages } from "../harness/session-file.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { extensionEntry, requestIdIn } from "./lab.ts"

const GREET = `export default {
  name: "greet",
  startAt: "ask",
  nodes: { ask: { type: "agent", timeoutMs: 600000, prompt: "Say hello and submit {\\"greeting\\": string}." } },
  edges: []
}
`

/** How long A's model takes over the step: B acts well inside it. */
const A_THINKS_MS = 6_000

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const lastText = (request: ChatRequest | undefined): string => contentText(request?.messages.at(-1)?.content)

/** The tool results the model got in a request, in order. */
const toolResults = (request: ChatRequest | undefined): ReadonlyArray<string> =>
  (request?.messages ?? []).filter((m) => m.role === "tool").map((m) => contentText(m.content))

const open = async (mock: MockOpenAI, db: string, prefix: string): Promise<PiRpc> => {
  const sandbox: PiSandbox = createPiSandbox(mock.baseUrl, prefix)
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

describe("two Pi sessions on one database", () => {
  it("B's model cannot cancel A's run: a refusal for B; A's turn, run and messages are untouched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-two-sessions-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = join(dir, "controller.db")
    let runIdOfA: string | null = null

    const mockA = await startMockOpenAI({
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "greet" } }] },
        { text: "Started." },
        (request) => ({
          delayMs: A_THINKS_MS,
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
    cleanups.push(() => mockA.close())
    const mockB = await startMockOpenAI({
      script: [
        () => ({
          toolCalls: [{ name: "workflow", arguments: { action: "cancel", runId: runIdOfA ?? "unset" } }]
        }),
        { text: "Understood, that run is not mine." }
      ]
    })
    cleanups.push(() => mockB.close())
    const piA = await open(mockA, db, "pwt-owner-a-")
    const piB = await open(mockB, db, "pwt-owner-b-")

    // A starts the run; its step prompt starts A's model turn, whose reply is held.
    await piA.prompt("run the greet workflow")
    await mockA.waitForRequests(3, 15_000)
    const stepRequest = 2
    const [run] = peekRows(db, "workflow_runs")
    runIdOfA = String(run?.run_id)
    expect(run?.state).toBe("running")

    // B's model cancels A's run by its ID, while A's model still works on the step.
    const markB = piB.mark()
    await piB.prompt("cancel that workflow run")
    await piB.waitForQuiet({ after: markB, timeoutMs: 15_000 })
    expect(mockA.outcomes()[stepRequest]).toBeUndefined()
    const [reply] = toolResults(mockB.requests()[1])
    expect(reply).toBe(
      `workflow cancel failed: run ${runIdOfA} belongs to another Pi session, not this one; ` +
        "the workflow tool cannot cancel it and nothing was changed. Act only on this session's runs."
    )
    const during = peekRows(db, "workflow_runs")[0]
    expect([during?.state, during?.cancel_requested]).toEqual(["running", null])

    // A's turn was never stopped: its model submits, and the run completes.
    await piA.waitForQuiet({ timeoutMs: 30_000, quietMs: 400 })
    expect(mockA.outcomes()).toEqual(mockA.requests().map(() => "completed"))
    const ended = peekRows(db, "workflow_runs")[0]
    expect(ended?.state).toBe("completed")
    const fileA = piA.sessionFile ?? ""
    expect(customMessages(fileA, "pi-workflows-presentation")).toHaveLength(1)
    expect(customMessages(fileA, "pi-workflows-deferred-turn")).toHaveLength(0)
    const told = customMessages(fileA).map(customContentText).join("\n")
    // The only cancel A reads is the terminal turn's general advice ("the user cancelled it").
    expect(told).not.toMatch(/agent cancelled|terminal state: cancelled|cancel requested/i)
    expect(mockA.requestsMentioning("agent cancelled")).toEqual([])
    // B's session got nothing from A's run.
    expect(customMessages(piB.sessionFile ?? "")).toHaveLength(0)
    expect(mockB.requestCount()).toBe(2)
  }, 90_000)
})
