/**
 * Real Pi (RPC): a step in flight shows its limit and its deadline. The model answers the
 * step's prompt with the tool's `status`, then slowly in plain text (no submit), so the step's
 * turn is still running (and no step reminder due) while `/workflow status`, the tool's
 * `status` and the operator CLI show the limit (written when the visit resolved it, not only
 * at the step's end) and the deadline, absolute and remaining. RPC mode gets no live status
 * line (that is interactive Pi's: tui-status-line.test.ts).
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { runCli } from "../../cli/cli-support.ts"
import { start } from "./scenario.ts"
import { startScenario } from "./support.ts"
import { SLOW } from "./workflow-sources.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..")
const BIN = join(ROOT, "dist", "cli.js")
const DEADLINE = /deadline \d{4}-\d\d-\d\dT[\d:.]+Z \(in (7h 59m|8h)\)/

describe("a step's limit and deadline in real Pi", () => {
  it("/workflow status, the tool's status and the CLI show them for the step in flight", async () => {
    const lab = await startScenario({
      workflows: { "slow.workflow.mjs": SLOW },
      script: [
        start("slow"),
        { text: "The run is queued." },
        // The step's prompt: the model checks the run, then answers slowly in plain text.
        { toolCalls: [{ name: "workflow", arguments: { action: "status" } }] },
        { text: "I will get to it later.", delayMs: 30_000 }
      ]
    })
    // The step's turn is in flight: its status call answered, its text reply not yet sent.
    const inFlight = () => lab.mock.requestCount() === 4 && lab.mock.outcomes()[3] === undefined
    await lab.pi.prompt("Run the slow workflow.")
    await lab.waitUntil(
      () => lab.mock.requestCount() >= 4,
      "the step's status call was answered and its text reply is in flight"
    )
    expect(inFlight()).toBe(true)
    const [run] = lab.runs()
    expect(run?.state).toBe("running")
    const runId = run?.runId ?? ""

    const status = lab.observe().toolResults.find((result) => result.text.includes("Step ask:"))
    expect(status?.isError).toBe(false)
    expect(status?.text).toMatch(
      new RegExp(`state running · node ask .*\\nStep ask: limit 8h, ${DEADLINE.source}`)
    )

    const panelOf = () => lab.observe().panels.find((text) => text.includes(`Run ${runId} of slow`))
    await lab.pi.prompt(`/workflow status ${runId}`)
    await lab.waitUntil(() => panelOf() !== undefined, "the /workflow status panel")
    const panel = panelOf() ?? ""
    expect(panel).toMatch(/: running\n/)
    expect(panel).toMatch(new RegExp(`\\nDeadline: ${DEADLINE.source.slice("deadline ".length)}`))
    expect(panel).toMatch(new RegExp(`1\\. ask — in flight for \\S+, limit 8h, ${DEADLINE.source}`))

    const shown = await runCli(BIN, lab.sandbox.workDir, ["show", runId, "--db", lab.dbPath])
    expect(shown.stdout).toMatch(/^1\s+ask\s+in flight\s+.+\s+-\s+8h\s+in (7h 59m|8h)$/m)
    // RPC mode is unchanged: no live status line was drawn.
    const footer = lab.pi
      .events()
      .filter((record) => record.type === "extension_ui_request" && record.method === "setStatus")
    expect(footer).toEqual([])
    // All of it was seen while the step's turn ran: no reminder reached the model meanwhile.
    expect(inFlight()).toBe(true)
    expect(lab.mock.requestsMentioning("Reminder 1 of 2")).toEqual([])
  }, 60_000)
})
