/**
 * Shared setup for the extension's real-Pi scenarios: a mock model, a sandbox with a project
 * workflow directory, the controller database in the sandbox, and Pi started with exactly the
 * entry `package.json` names in `pi.extensions`.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach } from "vitest"
import { type MockOpenAI, type ScriptStep, startMockOpenAI } from "../harness/mock-openai.ts"
import { createPiSandbox, type PiRpc, type PiSandbox, startPi } from "../harness/pi-rpc.ts"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")

/** The extension entry exactly as `pi.extensions` names it (built by `npm run build`). */
export const extensionEntry = (): string => {
  const pkg: unknown = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  const entries =
    typeof pkg === "object" && pkg !== null && "pi" in pkg && typeof pkg.pi === "object" && pkg.pi !== null
      ? "extensions" in pkg.pi && Array.isArray(pkg.pi.extensions)
        ? pkg.pi.extensions
        : []
      : []
  const first: unknown = entries[0]
  if (typeof first !== "string") throw new Error("package.json has no pi.extensions entry")
  return join(ROOT, first)
}

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

export interface Scenario {
  readonly mock: MockOpenAI
  readonly sandbox: PiSandbox
  readonly pi: PiRpc
  readonly dbPath: string
}

/** Start a scenario; `workflows` maps file names to `.workflow.mjs` sources. */
export const startScenario = async (options: {
  readonly workflows: Readonly<Record<string, string>>
  readonly script?: ReadonlyArray<ScriptStep>
}): Promise<Scenario> => {
  const mock = await startMockOpenAI({ script: options.script ?? [] })
  cleanups.push(() => mock.close())
  const sandbox = createPiSandbox(mock.baseUrl, "pwt-ext-")
  cleanups.push(() => sandbox.remove())
  const dir = join(sandbox.workDir, ".pi", "workflows")
  mkdirSync(dir, { recursive: true })
  for (const [name, source] of Object.entries(options.workflows)) writeFileSync(join(dir, name), source)
  const dbPath = join(sandbox.root, "controller.db")
  const pi = await startPi({ sandbox, extensionPath: extensionEntry(), env: { PI_WORKFLOWS_DB: dbPath } })
  cleanups.push(() => pi.dispose())
  return { mock, sandbox, pi, dbPath }
}

/** The requestId that the newest agent-step message in a request asked for. */
export const requestIdIn = (text: string): string => {
  const match = /requestId[^A-Za-z0-9]+([A-Za-z0-9:_-]{6,})/.exec(text)
  if (match?.[1] === undefined) throw new Error(`no requestId in: ${text.slice(0, 300)}`)
  return match[1]
}
