import { describe, it } from "vitest"
import { customMessages, customContentText } from "../harness/session-file.ts"
import { peekTurnIntents, peekRows } from "../harness/sqlite-peek.ts"
import { startScenario } from "./support.ts"

const dump = (label: string, s: Awaited<ReturnType<typeof startScenario>>, t0: number) => {
  const file = s.pi.sessionFile ?? ""
  console.log(`== ${label} ${Math.round(performance.now() - t0)}ms requests=${s.mock.requestCount()}`)
  try {
    for (const m of customMessages(file)) console.log("  msg", m.customType, JSON.stringify(customContentText(m).split("\n")[0]), JSON.stringify(m.details))
  } catch (e) { console.log("no session file", String(e)) }
  try { for (const r of peekTurnIntents(s.dbPath)) console.log("  intent", r.cause, r.eligible_at, r.resolution, r.fallback_facts_json) } catch (e) { console.log(String(e)) }
  try { for (const r of peekRows(s.dbPath, "workflow_runs")) console.log("  run", r.state, JSON.stringify(r).slice(0, 300)) } catch (e) { console.log(String(e)) }
  console.log(s.pi.events().filter(e => e.type !== "message_update").map(e => e.type + (e.type === "response" ? `(${String(e.command)})` : "")).join(" "))
  console.log(s.pi.stderr().slice(-1500))
}

describe("explore2", () => {
  it("launch failure", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `let checks = 0; export default { name: "flaky", startAt: "ask", input: () => (++checks === 1 ? true : "the ticket was closed before the run could start"), nodes: { ask: { type: "agent", prompt: "x" } }, edges: [] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "flaky" } }] },
        { text: "Started." },
        { text: "Noted." }
      ]
    })
    await s.pi.prompt("go")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    dump("launch", s, t0)
  })
  it("terminal timeout", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `export default { name: "slow", startAt: "review", nodes: { review: { type: "agent", prompt: "Review it.", timeoutMs: 300 } }, edges: [] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "slow" } }] },
        { text: "Started." },
        { text: "too late", delayMs: 2000 },
        { text: "Noted." }
      ]
    })
    await s.pi.prompt("go")
    await s.pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 400 })
    dump("terminal-timeout", s, t0)
  })
  it("direct cancel + escape", async () => {
    const t0 = performance.now()
    const s = await startScenario({
      workflows: { "c.workflow.mjs": `export default { name: "two", startAt: "a", nodes: { a: { type: "agent", prompt: "Step A.", timeoutMs: null } }, edges: [] }` },
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "two" } }] },
        { text: "Started." },
        { text: "working on it", delayMs: 3000 },
        { text: "after resume" },
      ]
    })
    await s.pi.prompt("go")
    await s.mock.waitForRequests(3)
    const m = s.pi.mark()
    const r = await s.pi.abortLikeEscape()
    console.log("abort response", JSON.stringify(r))
    await s.pi.waitForQuiet({ after: m, timeoutMs: 20_000, quietMs: 400 })
    dump("escape", s, t0)
    const m2 = s.pi.mark()
    const rr = await s.pi.prompt("/workflow resume")
    console.log("resume response", JSON.stringify(rr))
    await s.pi.waitForQuiet({ after: m2, timeoutMs: 20_000, quietMs: 400, requireSettle: false })
    dump("resumed", s, t0)
    console.log(JSON.stringify(s.pi.events().slice(m2).filter(e => e.type !== "message_update")).slice(0, 3000))
    const m3 = s.pi.mark()
    await s.pi.prompt("/workflow cancel")
    await s.pi.waitForQuiet({ after: m3, timeoutMs: 20_000, quietMs: 400, requireSettle: false })
    dump("cancelled", s, t0)
    console.log(JSON.stringify(s.pi.events().slice(m3).filter(e => e.type !== "message_update")).slice(0, 3000))
  })
})
