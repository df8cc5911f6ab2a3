/**
 * The temp sandbox that keeps a real Pi process away from the real home and configuration, with
 * a models.json pointing at the scripted mock model, and where the installed Pi CLI lives.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"

/** Temp directories that keep Pi away from the real home and configuration. */
export interface PiSandbox {
  readonly root: string
  readonly agentDir: string
  readonly homeDir: string
  readonly sessionDir: string
  /** Pi's working directory. */
  readonly workDir: string
  remove(): void
}

const PI_PACKAGE = "@earendil-works/pi-coding-agent"

/**
 * The installed Pi package's directory. Its exports are import-only, so `require.resolve` cannot
 * find it; `import.meta.resolve` can, but vitest 3's module runner does not provide it, so fall
 * back to Node's node_modules lookup from this file upwards.
 */
const piPackageDir = (): string => {
  if (typeof import.meta.resolve === "function") {
    // dist/index.js → package root
    return dirname(dirname(fileURLToPath(import.meta.resolve(PI_PACKAGE))))
  }
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, "node_modules", PI_PACKAGE)
    if (existsSync(join(candidate, "package.json"))) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`pi-rpc: ${PI_PACKAGE} is not installed above ${import.meta.url}`)
    dir = parent
  }
}

const PackageBin = Schema.Struct({ bin: Schema.Struct({ pi: Schema.String }) })

/** The Pi CLI named by the package's `bin.pi` (1.6: `dist/bundle/cli.js`). */
export const piCliPath = (): string => {
  const dir = piPackageDir()
  const { bin } = Schema.decodeUnknownSync(Schema.parseJson(PackageBin))(
    readFileSync(join(dir, "package.json"), "utf8")
  )
  const cli = join(dir, bin.pi)
  if (!existsSync(cli)) throw new Error(`pi-rpc: Pi CLI not found at ${cli}`)
  return cli
}

export const assertNodeVersion = () => {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
  if (major < 22 || (major === 22 && minor < 19)) {
    throw new Error(
      `pi-rpc: Pi needs Node >= 22.19 but tests run on ${process.versions.node}; ` +
        `run them after: eval "$(bash scripts/node22-env.sh)"`
    )
  }
}

/** Create the sandbox and a models.json whose only provider `mock` serves `mock-model` from `baseUrl`. */
export const createPiSandbox = (mockBaseUrl: string, prefix = "pwt-pi-"): PiSandbox => {
  const root = mkdtempSync(join(tmpdir(), prefix))
  const agentDir = join(root, "agent")
  const homeDir = join(root, "home")
  const sessionDir = join(root, "sessions")
  const workDir = join(root, "work")
  for (const dir of [agentDir, homeDir, sessionDir, workDir]) mkdirSync(dir, { recursive: true })
  const models = {
    providers: {
      mock: {
        baseUrl: mockBaseUrl,
        api: "openai-completions",
        apiKey: "mock-key",
        models: [{ id: "mock-model", contextWindow: 128000, maxTokens: 4096 }]
      }
    }
  }
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(models, null, 2))
  return {
    root,
    agentDir,
    homeDir,
    sessionDir,
    workDir,
    remove: () => rmSync(root, { recursive: true, force: true })
  }
}
