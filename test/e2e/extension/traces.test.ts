/**
 * Traces from a real Pi process: with OTEL_EXPORTER_OTLP_ENDPOINT set to a stand-in collector,
 * the built extension exports its spans, flushed when Pi shuts down; the agent's self-cancel
 * arrives as one trace, from the `workflow cancel` tool call to the fallback's resolution.
 */
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { startMockOpenAI } from "../harness/mock-openai.ts"
import { startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox } from "../harness/pi-sandbox.ts"
import { customMessages } from "../harness/session-file.ts"
import { attribute, receivedSpans, startCollector } from "../../support/otlp-collector.ts"
import { extensionEntry } from "./lab.ts"
import { TRIAGE } from "./workflow-sources.ts"
import { mkdirSync, writeFileSync } from "node:fs"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe("traces from real Pi", () => {
  it("the self-cancel's trace reaches the collector at shutdown, as one trace", async () => {
    const collector = await startCollector()
    cleanups.push(() => collector.close())
    const mock = await startMockOpenAI({
      script: [
        { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "triage" } }] },
        { text: "The triage run is queued." },
        { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] },
        { text: "The triage run is cancelled." }
      ]
    })
    cleanups.push(() => mock.close())
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-traces-")
    cleanups.push(() => sandbox.remove())
    mkdirSync(join(sandbox.workDir, ".pi", "workflows"), { recursive: true })
    writeFileSync(join(sandbox.workDir, ".pi", "workflows", "triage.workflow.mjs"), TRIAGE)
    const pi = await startPi({
      sandbox,
      extensionPath: extensionEntry(),
      env: {
        PI_WORKFLOWS_DB: join(sandbox.root, "controller.db"),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint
      },
      timeoutMs: 15_000
    })
    cleanups.push(() => pi.dispose())
    await pi.prompt("Label issue #42 with the triage workflow.")
    await pi.waitForQuiet({ timeoutMs: 20_000, quietMs: 500 })
    expect(mock.requestCount()).toBe(4)
    expect(customMessages(pi.sessionFile ?? "", "pi-workflows-deferred-turn")).toHaveLength(1)
    const exit = await pi.stop()
    expect(exit.code).toBe(0)

    const spans = receivedSpans(collector)
    const tool = spans.find((s) => s.name === "workflow.tool" && attribute(s, "workflow.action") === "cancel")
    expect(tool, "the cancel tool call's span").toBeDefined()
    const names = new Set(spans.filter((s) => s.traceId === tool?.traceId).map((s) => s.name))
    for (const name of [
      "Engine.cancel",
      "workflow.interruption",
      "Interruptions.abortActiveTurn",
      "TurnIntentStore.ensure",
      "Coordinator.sendFallback",
      "TurnIntentStore.resolve"
    ]) {
      expect(names, name).toContain(name)
    }
    // The session's shutdown work is among the last spans: flushed at the shutdown.
    expect(spans.map((s) => s.name)).toContain("Engine.shutdown")
  })
})
