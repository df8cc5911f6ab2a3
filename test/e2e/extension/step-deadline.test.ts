/**
 * Real Pi (RPC): a step in flight shows its limit and its deadline. The model answers the
 * step's prompt in plain text (no submit), so the step stays in flight; `/workflow status`,
 * the tool's `status` and the operator CLI then show the limit (written when the visit
 * resolved it, not only at the step's end) and the deadline, absolute and remaining. RPC mode
 * gets no live status line (that is interactive Pi's: tui-status-line.test.ts).
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
        // The step's prompt: answered in plain text, no submit.
        { text: "I will get to it later." },
        { toolCalls: [{ name: "workflow", arguments: { action: "status" } }] },
        { text: "It is still waiting for me." }
      ]
    })
    await lab.say("Run the slow workflow.", {
      until: () => lab.mock.requestCount() >= 3,
      label: "the step's prompt was answered"
    })
    const [run] = lab.runs()
    expect(run?.state).toBe("running")
    const runId = run?.runId ?? ""

    await lab.say(`/workflow status ${runId}`, { requireSettle: false })
    const panel = lab.observe().panels.find((text) => text.includes(`Run ${runId} of slow`)) ?? ""
    expect(panel).toMatch(/: running\n/)
    expect(panel).toMatch(new RegExp(`\\nDeadline: ${DEADLINE.source.slice("deadline ".length)}`))
    expect(panel).toMatch(new RegExp(`1\\. ask — in flight for \\S+, limit 8h, ${DEADLINE.source}`))

    await lab.say("How is the run doing?", {
      until: () => lab.mock.requestCount() >= 5,
      label: "the model's status call answered"
    })
    const status = lab.observe().toolResults.find((result) => result.text.includes("Step ask:"))
    expect(status?.isError).toBe(false)
    expect(status?.text).toMatch(
      new RegExp(`state running · node ask .*\\nStep ask: limit 8h, ${DEADLINE.source}`)
    )

    const shown = await runCli(BIN, lab.sandbox.workDir, ["show", runId, "--db", lab.dbPath])
    expect(shown.stdout).toMatch(/^1\s+ask\s+in flight\s+.+\s+-\s+8h\s+in (7h 59m|8h)$/m)
    // RPC mode is unchanged: no live status line was drawn.
    const footer = lab.pi
      .events()
      .filter((record) => record.type === "extension_ui_request" && record.method === "setStatus")
    expect(footer).toEqual([])
  }, 60_000)
})
