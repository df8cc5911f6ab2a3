/**
 * No credential leaves the process, on any output path (Pi's SDK in-process with the faux model;
 * the real extension entry). Property: for every catalogue secret shape (test/fuzz/secrets.ts)
 * embedded in arbitrary text that a workflow fails with (or completes with), none of these
 * carries it: any model request (the terminal message's content with its decision block, the
 * fallback facts, the tool's status and cancel replies), the session's entries and file (message
 * details, passive notifications), the card lines collapsed and expanded, `/workflow status`,
 * stderr, and the operator CLI's `show`, `runs`, `intents` and `doctor` output (text and JSON).
 * The stored run keeps the workflow's text.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { FastCheck as fc } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { main } from "../../../src/cli/main.ts"
import { cardLines } from "../../../src/extension/message-cards.ts"
import piWorkflowTurns from "../../../src/extension/index.ts"
import { embedded } from "../../fuzz/secrets.ts"
import { createFauxSession, type FauxSession, fauxAssistantMessage, fauxToolCall } from "../harness/sdk.ts"
import { peekRows } from "../harness/sqlite-peek.ts"

const workflow = (name: string, file: string, fails: boolean) => `import { readFileSync } from "node:fs"
export default {
  name: "${name}",
  startAt: "push",
  nodes: {
    push: {
      type: "compute",
      run: () => {
        const text = readFileSync(${JSON.stringify(file)}, "utf8")
        ${fails ? "throw new Error(text)" : "return { log: text }"}
      }
    }
  },
  edges: []
}
`

let sdk: FauxSession
let db = ""
let leakFile = ""
const written: Array<string> = []
let savedDb: string | undefined

beforeAll(async () => {
  savedDb = process.env.PI_WORKFLOWS_DB
  sdk = await createFauxSession({ extensions: [piWorkflowTurns], bind: false, persist: true })
  const dir = join(sdk.dir, "work", ".pi", "workflows")
  mkdirSync(dir, { recursive: true })
  leakFile = join(sdk.dir, "leak.txt")
  writeFileSync(join(dir, "leaky-fail.workflow.mjs"), workflow("leaky-fail", leakFile, true))
  writeFileSync(join(dir, "leaky-done.workflow.mjs"), workflow("leaky-done", leakFile, false))
  db = join(sdk.dir, "controller.db")
  process.env.PI_WORKFLOWS_DB = db
  // Everything written to stdout and stderr (notices without a UI, the CLI), kept for the checks.
  for (const stream of [process.stdout, process.stderr]) {
    vi.spyOn(stream, "write").mockImplementation((chunk: unknown) => {
      written.push(String(chunk))
      return true
    })
  }
  for (const method of ["log", "error", "warn", "info"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: ReadonlyArray<unknown>) => {
      written.push(args.map(String).join(" "))
    })
  }
  await sdk.bind()
})

afterAll(async () => {
  vi.restoreAllMocks()
  await sdk?.dispose()
  if (savedDb === undefined) delete process.env.PI_WORKFLOWS_DB
  else process.env.PI_WORKFLOWS_DB = savedDb
})

const newestRunId = (): string => {
  const row = peekRows(db, "workflow_runs", { orderBy: "created_at DESC, run_id DESC" })[0]
  const runId = row?.run_id
  if (typeof runId !== "string") throw new Error("no run stored")
  return runId
}

const waitFor = async (check: () => boolean, what: string, timeoutMs = 10_000) => {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** What the CLI prints for this run, in every form. */
const cliOutput = async (runId: string): Promise<string> => {
  const from = written.length
  for (const args of [
    ["show", runId],
    ["show", runId, "--json"],
    ["runs"],
    ["runs", "--json"],
    ["intents", "--json"],
    ["doctor"],
    ["doctor", "--json"]
  ]) {
    await main(["node", "pi-workflow-turns", ...args, "--db", db])
  }
  return written.slice(from).join("\n")
}

describe("no output path carries a credential (SDK, faux model)", () => {
  it("model requests, session entries and file, cards, /workflow status, notices and the CLI", async () => {
    let round = 0
    await fc.assert(
      fc.asyncProperty(embedded, fc.boolean(), async ({ sample, text }, fails) => {
        round++
        writeFileSync(leakFile, text)
        const calls = sdk.modelCalls()
        const entries = sdk.entries().length
        const from = written.length
        const status = () => fauxToolCall("workflow", { action: "status", runId: newestRunId() })
        sdk.enqueue(
          fauxAssistantMessage(
            fauxToolCall("workflow", { action: "start", workflow: fails ? "leaky-fail" : "leaky-done" })
          ),
          fauxAssistantMessage("Queued."),
          // The run's terminal turn (fallback or presentation with the decision block).
          () => fauxAssistantMessage(status()),
          () => fauxAssistantMessage(fauxToolCall("workflow", { action: "cancel", runId: newestRunId() })),
          fauxAssistantMessage("Done.")
        )
        await sdk.prompt(`round ${round}`)
        await waitFor(() => sdk.modelCalls() >= calls + 5, "the terminal turn and its tool calls")
        await sdk.waitForQuiet(50)
        const runId = newestRunId()
        await sdk.prompt(`/workflow status ${runId}`)

        const requests = JSON.stringify(
          sdk
            .contexts()
            .slice(calls)
            .map((context) => context.messages)
        )
        expect(requests, `${sample.shape}: model requests`).not.toContain(sample.needle)
        // The terminal message reached the model (the decision block with the run's outcome).
        expect(requests).toContain("Decide what happens next")
        const newEntries = sdk.entries().slice(entries)
        expect(JSON.stringify(newEntries), `${sample.shape}: session entries`).not.toContain(sample.needle)
        const file = sdk.session.sessionManager.getSessionFile()
        if (file !== undefined && existsSync(file)) {
          expect(readFileSync(file, "utf8"), `${sample.shape}: session file`).not.toContain(sample.needle)
        }
        for (const entry of newEntries) {
          if (entry.type !== "custom_message") continue
          for (const expanded of [false, true]) {
            const lines = cardLines(entry, expanded).map((line) => line.text)
            expect(lines.join("\n"), `${sample.shape}: card`).not.toContain(sample.needle)
          }
        }
        const notices = written.slice(from).join("\n")
        expect(notices, "/workflow status answered").toContain(`Run ${runId} of leaky-`)
        expect(notices, `${sample.shape}: notices`).not.toContain(sample.needle)
        const cli = await cliOutput(runId)
        expect(cli, "the CLI showed the run").toContain(runId)
        expect(cli, `${sample.shape}: CLI`).not.toContain(sample.needle)
        // Only what is shown is redacted: the stored run keeps what the workflow wrote.
        const stored = JSON.stringify(peekRows(db, "workflow_runs", { where: "run_id = ?", params: [runId] }))
        expect(stored).toContain(sample.needle)
      }),
      { numRuns: Number(process.env.REDACTION_RUNS ?? 16) }
    )
  }, 240_000)
})
