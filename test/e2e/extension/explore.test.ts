import { describe, it } from "vitest"
import { customMessages, customContentText } from "../harness/session-file.ts"
import { peekTurnIntents } from "../harness/sqlite-peek.ts"
import { requestIdIn, startScenario } from "./support.ts"
import { contentText } from "../harness/mock-openai.ts"

const lastText = (request: { messages: ReadonlyArray<{ content?: unknown }> }) => contentText(request.messages.at(-1)?.content)

const dump = (label: string, s: Awaited<ReturnType<typeof startScenario>>, t0: number) => {
  const file = s.pi.sessionFile ?? ""
  console.log(`== ${label} ${Math.round(performance.now() - t0)}ms requests=${s.mock.requestCount()}`)
  try {
    for (const m of customMessages(file)) console.log("  msg", m.customType, JSON.stringify(customContentText(m).split("\n")[0]), JSON.stringify(m.details))
  } catch (e) { console.log("no session file", String(e)) }
  for (const r of peekTurnIntents(s.dbPath)) console.log("  intent", JSON.stringify(r))
  console.log(s.pi.stderr().slice(-1500))
}

describe("explore", () => {
  it("self-cancel", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `export default { name: "cancel-me", startAt: "ask", nodes: { ask: { type: "agent", prompt: "Do the thing.", timeoutMs: null } }, edges: [] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "cancel-me" } }] },
        { text: "Started." },
        { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] },
        { text: "after cancel (should not happen)" },
        { text: "Noted the notice." }
      ]
    })
    await s.pi.prompt("go")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    dump("self-cancel", s, t0)
  })
  it("crash after start", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `export default { name: "crashy", startAt: "boom", nodes: { boom: { type: "compute", run: () => { throw new Error("database unreachable") } } }, edges: [] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "crashy" } }] },
        { text: "Started." },
        { text: "Noted the notice." }
      ]
    })
    await s.pi.prompt("go")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    dump("crash", s, t0)
  })
  it("timeout with recovery", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `export default { name: "slow", startAt: "review", nodes: {
        review: { type: "agent", prompt: "Review it.", timeoutMs: 300 },
        recover: { type: "agent", prompt: "The review timed out; decide now.", timeoutMs: null } },
        edges: [{ from: "review", switch: { on: "$result.outcome", cases: { ok: "recover", timed_out: "recover" } } }] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "slow" } }] },
        { text: "Started." },
        { text: "too late", delayMs: 2000 },
        (r) => ({ toolCalls: [{ name: "workflow", arguments: { action: "submit", requestId: requestIdIn(lastText(r)), output: { ok: true } } }] }),
        { text: "Submitted." },
        { text: "Presented." }
      ]
    })
    await s.pi.prompt("go")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    dump("timeout-recover", s, t0)
  })
})
