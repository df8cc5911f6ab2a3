/**
 * The extension's wiring in-process (Pi's SDK with the faux model; no child process): the tool
 * and the command are registered, and a start → step → submit → presentation round trip works
 * on the composed layer. Fast; the real-Pi scenarios cover the rest.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { AssistantMessage, FauxResponseStep } from "@earendil-works/pi-ai"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import piWorkflowTurns from "../../../src/extension/index.ts"
import { createFauxSession, type FauxSession, fauxAssistantMessage, fauxToolCall } from "../harness/sdk.ts"
import { peekTurnIntents } from "../harness/sqlite-peek.ts"
import { FALLBACK, PRESENTATION, requestIdIn, STEP } from "./lab.ts"

const GREET = `export default {
  name: "greet",
  startAt: "hello",
  nodes: { hello: { type: "agent", prompt: "Say hello: answer {\\"greeting\\": string}.", timeoutMs: null } },
  edges: []
}
`

const sessions: Array<FauxSession> = []
let savedDb: string | undefined

beforeEach(() => {
  savedDb = process.env.PI_WORKFLOWS_DB
})

afterEach(async () => {
  for (const sdk of sessions.splice(0)) await sdk.dispose()
  if (savedDb === undefined) delete process.env.PI_WORKFLOWS_DB
  else process.env.PI_WORKFLOWS_DB = savedDb
})

/** A faux session over the extension, with `greet` in the project and the DB in its temp dir. */
const open = async (replies: ReadonlyArray<FauxResponseStep>) => {
  const sdk = await createFauxSession({ extensions: [piWorkflowTurns], replies, bind: false })
  sessions.push(sdk)
  const workflows = join(sdk.dir, "work", ".pi", "workflows")
  mkdirSync(workflows, { recursive: true })
  writeFileSync(join(workflows, "greet.workflow.mjs"), GREET)
  // Never the default location under the real home: the extension reads this at session start.
  const db = join(sdk.dir, "controller.db")
  process.env.PI_WORKFLOWS_DB = db
  await sdk.bind()
  return { sdk, db }
}

const lastText = (messages: ReadonlyArray<{ role: string; content: unknown }>): string => {
  const content = messages.at(-1)?.content
  if (typeof content === "string") return content
  return Array.isArray(content)
    ? content
        .map((part: unknown) =>
          typeof part === "object" && part !== null && "text" in part ? String(part.text) : ""
        )
        .join("")
    : ""
}

const waitFor = async (check: () => boolean, what: string, timeoutMs = 5_000) => {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe("extension wiring (SDK, faux model)", () => {
  it("registers the workflow tool and the /workflow command", async () => {
    const { sdk } = await open([])
    expect(sdk.session.getAllTools().map((tool) => tool.name)).toContain("workflow")
    expect(sdk.session.extensionRunner.getCommand("workflow")).toBeDefined()
  })

  it("start → step → submit → presentation, which resolves the run's terminal turn intent", async () => {
    const { sdk, db } = await open([
      fauxAssistantMessage(fauxToolCall("workflow", { action: "start", workflow: "greet" })),
      fauxAssistantMessage("Queued."),
      (context): AssistantMessage =>
        fauxAssistantMessage(
          fauxToolCall("workflow", {
            action: "submit",
            requestId: requestIdIn(lastText(context.messages)),
            output: { greeting: "hi" }
          })
        ),
      fauxAssistantMessage("Submitted."),
      fauxAssistantMessage("Presented.")
    ])
    await sdk.prompt("greet me")
    await waitFor(() => sdk.customMessages(PRESENTATION).length === 1, "the presentation")
    await sdk.waitForQuiet(100)
    expect(sdk.modelCalls()).toBe(5)
    expect(sdk.customMessages(STEP)).toHaveLength(1)
    expect(sdk.customMessages(FALLBACK)).toHaveLength(0)
    expect(peekTurnIntents(db).map((row) => [row.cause, row.resolution])).toEqual([
      ["completed", "presentation"]
    ])
  })
})
