/**
 * Self-tests of the real-Pi harness: the mock model, the RPC driver, the session-file reader,
 * the SQLite peek and the in-process SDK path, against the fixture extension.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import Database from "better-sqlite3"
import { Type } from "typebox"
import { afterEach, describe, expect, it } from "vitest"
import fixtureExtension, { createFixture, FOLLOWUP_TYPE, NOTE_TYPE } from "./fixtures/abort-followup.ts"
import { type MockOpenAI, startMockOpenAI } from "./harness/mock-openai.ts"
import { type PiRpc, startPi } from "./harness/pi-rpc.ts"
import { createPiSandbox } from "./harness/pi-sandbox.ts"
import { createFauxSession, fauxAssistantMessage, fauxToolCall } from "./harness/sdk.ts"
import {
  countByCustomType,
  customContentText,
  customMessages,
  findByTurnIntentId,
  messageRoles,
  readSessionFile,
  sessionEntries
} from "./harness/session-file.ts"
import { peekRows, peekTables, peekTurnIntents } from "./harness/sqlite-peek.ts"

const FIXTURE = fileURLToPath(new URL("./fixtures/abort-followup.ts", import.meta.url))

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A mock model, a sandbox and a started Pi with the fixture, all cleaned up after the test. */
const setup = async (env: Readonly<Record<string, string>> = {}) => {
  const mock = await startMockOpenAI()
  cleanups.push(() => mock.close())
  const sandbox = createPiSandbox(mock.baseUrl)
  cleanups.push(() => sandbox.remove())
  const eventLog = join(sandbox.root, "fixture-events.jsonl")
  const pi = await startPi({ sandbox, extensionPath: FIXTURE, env: { FIXTURE_EVENT_LOG: eventLog, ...env } })
  cleanups.push(() => pi.dispose())
  return { mock, sandbox, pi, eventLog }
}

const fixtureEvents = (file: string): ReadonlyArray<Record<string, unknown>> =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line): Record<string, unknown> => JSON.parse(line))

const sessionFileOf = (pi: PiRpc): string => {
  const file = pi.sessionFile
  if (file === undefined) throw new Error("no session file")
  return file
}

describe("mock OpenAI server", () => {
  const post = (mock: MockOpenAI, messages: ReadonlyArray<unknown>, signal?: AbortSignal) =>
    fetch(`${mock.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "mock-model", stream: true, messages }),
      ...(signal === undefined ? {} : { signal })
    })

  it("answers the script in order, then the default, and records every request", async () => {
    const mock = await startMockOpenAI({
      script: [{ text: "first" }, (request) => ({ text: `saw ${request.messages.length} message(s)` })]
    })
    cleanups.push(() => mock.close())
    const bodies: Array<string> = []
    for (const text of ["a", "b", "c"]) {
      const response = await post(mock, [{ role: "user", content: text }])
      bodies.push(await response.text())
    }
    expect(bodies[0]).toContain('"content":"first"')
    expect(bodies[1]).toContain("saw 1 message(s)")
    expect(bodies[2]).toContain('"content":"ok"')
    expect(bodies.every((body) => body.trimEnd().endsWith("data: [DONE]"))).toBe(true)
    expect(mock.requestCount()).toBe(3)
    expect(mock.userContents(1)).toEqual(["b"])
    expect(mock.lastUserContent()).toBe("c")
    expect(mock.requestsMentioning("b")).toEqual([1])
    expect(mock.outcomes()).toEqual(["completed", "completed", "completed"])
  })

  it("streams tool calls with finish_reason tool_calls", async () => {
    const mock = await startMockOpenAI({
      script: [{ toolCalls: [{ name: "fixture", arguments: { mode: "echo" } }] }]
    })
    cleanups.push(() => mock.close())
    const body = await (await post(mock, [{ role: "user", content: "x" }])).text()
    expect(body).toContain('"name":"fixture"')
    expect(body).toContain(JSON.stringify(JSON.stringify({ mode: "echo" })))
    expect(body).toContain('"finish_reason":"tool_calls"')
  })

  it("stops a delayed reply when the client disconnects", async () => {
    const mock = await startMockOpenAI({ script: [{ text: "never", delayMs: 10_000 }] })
    cleanups.push(() => mock.close())
    const controller = new AbortController()
    const response = await post(mock, [{ role: "user", content: "x" }], controller.signal)
    controller.abort()
    await expect(response.text()).rejects.toThrow()
    // A reply that waited out its 10 s delay would be "completed", not "clientClosed".
    await expect.poll(() => mock.outcomes()[0], { timeout: 2_000 }).toBe("clientClosed")
    // Closing with nothing in flight is immediate.
  })

  it("rejects a body that is not a chat request and counts it nowhere", async () => {
    const mock = await startMockOpenAI()
    cleanups.push(() => mock.close())
    const response = await fetch(`${mock.baseUrl}/chat/completions`, { method: "POST", body: "{nope" })
    expect(response.status).toBe(400)
    expect(mock.requestCount()).toBe(0)
    await fetch(`${mock.baseUrl}/models`)
    expect(mock.strayRequests()).toEqual(["GET /v1/models"])
  })
})

describe("real Pi over RPC", () => {
  it("a plain prompt makes exactly one model request", async () => {
    const { mock, pi } = await setup()
    mock.enqueue({ text: "hello back" })
    const mark = pi.mark()
    const response = await pi.prompt("hello there")
    expect(response.data).toEqual({ disposition: "started" })
    await pi.waitForQuiet({ after: mark })
    expect(mock.requestCount()).toBe(1)
    expect(mock.lastUserContent()).toBe("hello there")
    expect(mock.requests()[0]?.toolNames).toContain("fixture")
    expect(mock.strayRequests()).toEqual([])
    const settled = pi.eventsOfType("agent_settled", mark)
    expect(settled.map((event) => event.aborted)).toEqual([false])
    await pi.stop()
    expect(messageRoles(sessionFileOf(pi))).toEqual(["system", "user", "assistant"])
  })

  it("abort then follow-up from agent_settled: two model requests, one custom message", async () => {
    const { mock, pi, eventLog } = await setup()
    mock.enqueue(
      { toolCalls: [{ name: "fixture", arguments: { mode: "abortThenFollowUp" } }] },
      { text: "continuing" }
    )
    const mark = pi.mark()
    await pi.prompt("start the fixture")
    // The first settle is the aborted one; the follow-up run settles second.
    const first = await pi.waitForSettled({ after: mark })
    expect(first.aborted).toBe(true)
    await pi.waitForQuiet({ after: mark })
    expect(pi.eventsOfType("agent_settled", mark).map((event) => event.aborted)).toEqual([true, false])
    expect(mock.requestCount()).toBe(2)
    expect(mock.findUserContents("Fixture follow-up", 0)).toEqual([])
    expect(mock.findUserContents("Fixture follow-up", 1)).toEqual([
      "Fixture follow-up #1: the tool aborted the turn; continue."
    ])
    expect(mock.lastUserContent()).toContain("Fixture follow-up #1")
    await pi.stop()
    const file = sessionFileOf(pi)
    expect(countByCustomType(file)).toEqual({ [FOLLOWUP_TYPE]: 1 })
    const [followUp] = customMessages(file, FOLLOWUP_TYPE)
    expect(followUp?.details).toEqual({ n: 1 })
    expect(followUp?.display).toBe(true)
    expect(fixtureEvents(eventLog).map((e) => e.event)).toEqual([
      "session_start",
      "agent_settled",
      "agent_settled",
      "session_shutdown"
    ])
  })

  it("the user's Escape during a delayed reply aborts quietly: one request, no follow-up", async () => {
    const { mock, pi } = await setup()
    mock.enqueue({ text: "too late", delayMs: 10_000 })
    const mark = pi.mark()
    await pi.prompt("slow question")
    await mock.waitForRequests(1)
    const abort = await pi.abortLikeEscape()
    expect(abort.success).toBe(true)
    // The abort did not wait for the delayed reply: the mock saw the client go away first.
    expect(mock.outcomes()[0]).not.toBe("completed")
    await pi.waitForQuiet({ after: mark })
    expect(pi.eventsOfType("agent_settled", mark).map((event) => event.aborted)).toEqual([true])
    expect(mock.requestCount()).toBe(1)
    await expect.poll(() => mock.outcomes()[0], { timeout: 2_000 }).toBe("clientClosed")
    await pi.stop()
    expect(customMessages(sessionFileOf(pi))).toEqual([])
  })

  it("kill -9, then resume with --session: entries survive and session_start fires again", async () => {
    const { mock, pi, eventLog } = await setup()
    mock.enqueue({ text: "first answer" })
    const mark = pi.mark()
    await pi.prompt("remember the word pineapple")
    await pi.waitForQuiet({ after: mark })
    const file = sessionFileOf(pi)
    const before = sessionEntries(file)
    const killed = await pi.kill()
    expect(killed.signal).toBe("SIGKILL")
    expect(fixtureEvents(eventLog).map((e) => e.event)).not.toContain("session_shutdown")

    const resumed = await pi.restart()
    cleanups.push(() => resumed.dispose())
    expect(resumed.sessionFile).toBe(file)
    expect(sessionEntries(file).map((e) => e.id)).toEqual(before.map((e) => e.id))
    const starts = fixtureEvents(eventLog).filter((e) => e.event === "session_start")
    expect(starts.map((e) => e.reason)).toEqual(["startup", "startup"])
    expect(starts[1]?.pid).toBe(resumed.pid)
    // The resumed branch already holds the earlier entries (header excluded).
    expect(starts[1]?.branchEntries).toBe(before.length)

    mock.enqueue({ text: "second answer" })
    const again = resumed.mark()
    await resumed.prompt("what was the word?")
    await resumed.waitForQuiet({ after: again })
    expect(mock.requestCount()).toBe(2)
    expect(mock.userContents(1)).toEqual(["remember the word pineapple", "what was the word?"])
  })

  it("/fixture-note sends a message without a turn; it is saved with the next assistant message", async () => {
    const { mock, pi } = await setup()
    const mark = pi.mark()
    const response = await pi.prompt("/fixture-note a quiet note")
    expect(response.data).toEqual({ disposition: "handled" })
    await pi.waitForQuiet({ after: mark, requireSettle: false })
    expect(mock.requestCount()).toBe(0)
    expect(pi.eventsOfType("agent_start", mark)).toEqual([])
    // Pi writes a new session's file only once it holds an assistant message.
    expect(existsSync(sessionFileOf(pi))).toBe(false)
    await pi.prompt("now a real prompt")
    await pi.waitForQuiet({ after: mark })
    expect(mock.requestCount()).toBe(1)
    expect(mock.userContents(0)).toEqual(["a quiet note", "now a real prompt"])
    await pi.stop()
    const notes = customMessages(sessionFileOf(pi), NOTE_TYPE)
    expect(notes.map(customContentText)).toEqual(["a quiet note"])
    expect(notes[0]?.details).toEqual({ args: "a quiet note" })
  })

  it("a runaway extension (a follow-up per settle) makes waitForQuiet fail fast, not hang", async () => {
    const { mock, pi } = await setup({ FIXTURE_RUNAWAY: "1" })
    const mark = pi.mark()
    await pi.prompt("go")
    await expect(pi.waitForQuiet({ after: mark, timeoutMs: 800 })).rejects.toThrow(
      /timed out waiting for quiet/
    )
    expect(mock.requestCount()).toBeGreaterThan(2)
  })

  it("a wait that cannot be met fails with the recent events and stderr in the message", async () => {
    const { pi } = await setup()
    await expect(pi.waitForSettled({ timeoutMs: 200 })).rejects.toThrow(
      /timed out after 200 ms waiting for agent_settled #1[\s\S]*events: .*response\(get_state\)[\s\S]*stderr tail/
    )
    await pi.kill()
    await expect(pi.prompt("after death")).rejects.toThrow(/exited code=null signal=SIGKILL/)
  })
})

describe("session file reader", () => {
  it("finds custom messages by details.turnIntentId and reports a torn last line", () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-sf-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "s.jsonl")
    const custom = (id: string, intent: string) =>
      JSON.stringify({
        type: "custom_message",
        id,
        parentId: null,
        timestamp: "2026-01-01T00:00:00.000Z",
        customType: "workflow-fallback",
        content: [{ type: "text", text: `for ${intent}` }],
        display: true,
        details: { turnIntentId: intent }
      })
    writeFileSync(
      file,
      [
        JSON.stringify({ type: "session", version: 3, id: "s", timestamp: "t", cwd: "/" }),
        custom("a", "intent-1"),
        custom("b", "intent-2"),
        '{"type":"custom_mess'
      ].join("\n")
    )
    const contents = readSessionFile(file)
    expect(contents.lines).toHaveLength(3)
    expect(contents.truncatedTail).toBe('{"type":"custom_mess')
    expect(findByTurnIntentId(file, "intent-2").map((e) => e.id)).toEqual(["b"])
    expect(findByTurnIntentId(file, "intent-3")).toEqual([])
    expect(countByCustomType(file)).toEqual({ "workflow-fallback": 2 })
    expect(customMessages(file).map(customContentText)).toEqual(["for intent-1", "for intent-2"])

    writeFileSync(file, `{"type":"session"}\nnot json\n{"type":"label"}\n`)
    expect(() => readSessionFile(file)).toThrow(/line 2 is not a session entry/)
  })
})

describe("sqlite peek", () => {
  it("reads rows read-only and refuses unknown tables", () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-peek-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "db.sqlite")
    const db = new Database(file)
    db.pragma("journal_mode = WAL")
    db.exec(
      "CREATE TABLE workflow_turn_intents (intent_id TEXT PRIMARY KEY, requested_at TEXT, resolved_at TEXT)"
    )
    db.prepare("INSERT INTO workflow_turn_intents VALUES (?, ?, ?)").run("i2", "2026-01-02", null)
    db.prepare("INSERT INTO workflow_turn_intents VALUES (?, ?, ?)").run("i1", "2026-01-01", "2026-01-03")
    // Still open by the writer, as the extension's database would be while Pi runs.
    cleanups.push(() => {
      db.close()
    })
    expect(peekTables(file)).toEqual(["workflow_turn_intents"])
    expect(peekTurnIntents(file).map((row) => row.intent_id)).toEqual(["i1", "i2"])
    expect(peekRows(file, "workflow_turn_intents", { where: "resolved_at IS NULL" })).toEqual([
      { intent_id: "i2", requested_at: "2026-01-02", resolved_at: null }
    ])
    expect(() => peekRows(file, "nope")).toThrow(/no table nope/)
    expect(() => peekRows(join(dir, "missing.sqlite"), "x")).toThrow()
  })
})

describe("in-process SDK with the faux model", () => {
  it("runs a two-turn exchange through an extension tool; dispose emits session_shutdown", async () => {
    const lifecycle: Array<string> = []
    const extension = (pi: ExtensionAPI) => {
      pi.on("session_start", (event) => {
        lifecycle.push(`start:${event.reason}`)
      })
      pi.on("session_shutdown", (event) => {
        lifecycle.push(`shutdown:${event.reason}`)
      })
      pi.registerTool({
        name: "shout",
        label: "Shout",
        description: "Upper-cases its input",
        parameters: Type.Object({ text: Type.String() }),
        execute: async (_id, params) => ({
          content: [{ type: "text", text: params.text.toUpperCase() }],
          details: {}
        })
      })
    }
    const sdk = await createFauxSession({
      extensions: [extension],
      replies: [
        fauxAssistantMessage(fauxToolCall("shout", { text: "hi" })),
        (context) => fauxAssistantMessage(`tool said ${JSON.stringify(context.messages.at(-1)?.content)}`)
      ]
    })
    cleanups.push(() => sdk.dispose())
    expect(lifecycle).toEqual(["start:startup"])
    await sdk.prompt("please shout")
    expect(sdk.modelCalls()).toBe(2)
    const seen = sdk.contexts()[1]?.messages.map((message) => message.role)
    expect(seen).toEqual(["system", "user", "assistant", "toolResult"])
    const roles = sdk.entries().flatMap((entry) => (entry.type === "message" ? [entry.message.role] : []))
    expect(roles).toEqual(["system", "user", "assistant", "toolResult", "assistant"])
    expect(sdk.session.getLastAssistantText()).toContain("HI")
    await sdk.dispose()
    expect(lifecycle).toEqual(["start:startup", "shutdown:quit"])
  })

  it("runs the file fixture in-process: abort then exactly one follow-up turn", async () => {
    const sdk = await createFauxSession({
      extensions: [fixtureExtension],
      replies: [
        fauxAssistantMessage(fauxToolCall("fixture", { mode: "abortThenFollowUp" })),
        fauxAssistantMessage("done")
      ]
    })
    cleanups.push(() => sdk.dispose())
    await sdk.prompt("go")
    expect(sdk.modelCalls()).toBe(2)
    expect(sdk.customMessages(FOLLOWUP_TYPE).map((entry) => entry.details)).toEqual([{ n: 1 }])
    const settles = sdk.events().flatMap((event) => (event.type === "agent_settled" ? [event.aborted] : []))
    expect(settles).toEqual([true, false])
  })

  it("a runaway extension cannot hang the worker: prompt and dispose time out and cut the loop", async () => {
    const sdk = await createFauxSession({ extensions: [createFixture({ runaway: true })] })
    cleanups.push(() => sdk.dispose().catch(() => {}))
    await expect(sdk.prompt("go", 300)).rejects.toThrow(/did not finish within 300 ms/)
    expect(sdk.modelCalls()).toBeGreaterThan(2)
    await expect(sdk.dispose(200)).rejects.toThrow(/did not finish within 200 ms/)
    const calls = sdk.modelCalls()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(sdk.modelCalls()).toBe(calls)
  })
})
