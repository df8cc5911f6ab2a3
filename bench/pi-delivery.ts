/**
 * Fallback delivery latency in real Pi: from `agent_settled {aborted: true}` (the aborted
 * workflow turn is over) to the fallback message being appended (`message_end` of the
 * `pi-workflows-deferred-turn` custom message). One Pi process (RPC mode, the built extension,
 * the scripted mock model) runs a self-cancelling workflow again and again: the model starts
 * it, the step's turn calls `workflow cancel`, the extension aborts that turn and owes exactly
 * one fallback after it settles.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type ChatRequest, contentText, startMockOpenAI } from "../test/e2e/harness/mock-openai.ts"
import { isCustomMessageEnd } from "../test/e2e/harness/rpc-records.ts"
import { startPi } from "../test/e2e/harness/pi-rpc.ts"
import { createPiSandbox } from "../test/e2e/harness/pi-sandbox.ts"
import { customMessages } from "../test/e2e/harness/session-file.ts"
import { type Arrival, builtExtension, timestampLines } from "./pi-support.ts"
import { type BenchSection, type Check, mark } from "./section.ts"
import { summarize, table } from "./stats.ts"

const FALLBACK = "pi-workflows-deferred-turn"
const STEP_PROMPT = "BENCH STEP: cancel this workflow now."
const START_PROMPT = "bench: start cancel-me"

const WORKFLOW = `export default {
  name: "cancel-me",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: ${JSON.stringify(STEP_PROMPT)}, timeoutMs: null } },
  edges: []
}
`

/** The model: start on the user's prompt, cancel inside the step's turn, acknowledge anything else. */
const route = (request: ChatRequest) => {
  const last = request.messages.at(-1)
  const text = contentText(last?.content)
  if (last?.role === "user" && text.includes(START_PROMPT))
    return { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "cancel-me" } }] }
  if (last?.role === "user" && text.includes(STEP_PROMPT))
    return { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] }
  return { text: "Noted." }
}

const isFallbackEnd = (record: Readonly<Record<string, unknown>>): boolean =>
  isCustomMessageEnd(record, FALLBACK)

const isCancel = (record: Readonly<Record<string, unknown>>): boolean => {
  const args = record.args
  return typeof args === "object" && args !== null && "action" in args && args.action === "cancel"
}

export const piDeliverySection: BenchSection = {
  id: "pi-delivery",
  title: "Fallback delivery in real Pi: agent_settled → fallback appended",
  run: async (context) => {
    const runs = context.quick ? 3 : 25
    const extension = builtExtension(context.log)
    const mock = await startMockOpenAI({ script: Array.from({ length: runs * 8 }, () => route) })
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-bench-pi-")
    const samples: Array<number> = []
    const aborts: Array<number> = []
    let sessionFile = ""
    try {
      const dir = join(sandbox.workDir, ".pi", "workflows")
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, "cancel-me.workflow.mjs"), WORKFLOW)
      const pi = await startPi({
        sandbox,
        extensionPath: extension,
        env: { PI_WORKFLOWS_DB: join(sandbox.root, "controller.db") },
        timeoutMs: 20_000
      })
      try {
        const arrivals: ReadonlyArray<Arrival> = timestampLines(pi.child.stdout)
        for (let i = 0; i < runs; i++) {
          const from = arrivals.length
          const cursor = pi.mark()
          await pi.prompt(START_PROMPT)
          await pi.waitFor((r) => isFallbackEnd(r), {
            after: cursor,
            timeoutMs: 20_000,
            label: "the fallback"
          })
          await pi.waitForQuiet({ after: cursor, timeoutMs: 20_000, quietMs: 100 })
          const seen = arrivals.slice(from)
          const settled = seen.find((a) => a.record.type === "agent_settled" && a.record.aborted === true)
          const appended = seen.find((a) => isFallbackEnd(a.record))
          if (settled === undefined || appended === undefined || appended.at < settled.at) {
            throw new Error(`pi-delivery run ${i + 1}: no aborted settle before the fallback`)
          }
          samples.push(appended.at - settled.at)
          const cancel = seen.find((a) => a.record.type === "tool_execution_start" && isCancel(a.record))
          if (cancel !== undefined && cancel.at <= settled.at) aborts.push(settled.at - cancel.at)
        }
        sessionFile = pi.sessionFile ?? ""
        await pi.stop()
      } finally {
        await pi.dispose()
      }
    } finally {
      await mock.close()
    }
    const fallbacks = sessionFile === "" ? 0 : customMessages(sessionFile, FALLBACK).length
    sandbox.remove()
    const all = summarize(samples)
    const warm = summarize(samples.slice(1))
    const abortSummary = summarize(aborts)
    const checks: Array<Check> = [
      {
        name: "pi-delivery: exactly one fallback per self-cancelled run in the session file",
        ok: fallbacks === runs,
        detail: `${fallbacks} fallbacks for ${runs} runs`
      }
    ]
    const ms = (value: number) => value.toFixed(2)
    const markdown = [
      `${runs} self-cancelled runs in one Pi process (Pi RPC mode, dist/extension.js, mock model on 127.0.0.1), ms. ` +
        "Times are when the bench read each event from Pi's stdout; both events travel the same pipe. With " +
        `${runs} samples the p99 is the maximum.`,
      "",
      table(
        ["agent_settled → fallback appended", "median", "p99", "min", "max"],
        [
          [
            `all ${runs} runs`,
            ms(all.median),
            ms(all.p99),
            ms(Math.min(...samples)),
            ms(Math.max(...samples))
          ],
          [
            `runs 2–${runs} (first run excluded)`,
            ms(warm.median),
            ms(warm.p99),
            ms(Math.min(...samples.slice(1))),
            ms(Math.max(...samples.slice(1)))
          ],
          ["first run (cold code paths)", ms(samples[0] ?? Number.NaN), "", "", ""]
        ]
      ),
      "",
      "0.00 means both events arrived in one read of Pi's stdout: below what this method resolves. For context, " +
        "the Pi-side abort: from the `workflow cancel` tool call starting to the aborted turn's `agent_settled`:",
      "",
      table(
        ["tool_execution_start (cancel) → agent_settled {aborted}", "median", "p99", "min", "max"],
        [
          [
            `${aborts.length} runs`,
            ms(abortSummary.median),
            ms(abortSummary.p99),
            ms(Math.min(...aborts)),
            ms(Math.max(...aborts))
          ]
        ]
      ),
      "",
      `- ${mark(checks[0]?.ok ?? false)} ${checks[0]?.name}: ${checks[0]?.detail}`
    ].join("\n")
    return { markdown, checks, goals: [] }
  }
}
