/**
 * The command line and environment a sandboxed real Pi runs with: RPC mode on the mock model,
 * no discovered skills, templates or context files, offline, home and agent dir in the sandbox.
 */
import { isAbsolute } from "node:path"
import { assertNodeVersion, type PiSandbox, piCliPath } from "./pi-sandbox.ts"

export interface PiRpcOptions {
  readonly sandbox: PiSandbox
  /** Absolute path of the extension to load with `-e`, or null for none. */
  readonly extensionPath: string | null
  /**
   * Let Pi discover extensions (packages recorded in the sandbox's agent settings, e.g. by
   * `pi install`) instead of passing `--no-extensions`. Off by default.
   */
  readonly discoverExtensions?: boolean
  /** Extra environment, e.g. `PI_WORKFLOWS_DB`. */
  readonly env?: Readonly<Record<string, string>>
  /** Resume this session file (`--session`). */
  readonly sessionFile?: string
  readonly extraArgs?: ReadonlyArray<string>
  /** Default for every wait. 10 s. */
  readonly timeoutMs?: number
}

export interface PiCommand {
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

export const piCommand = (options: PiRpcOptions): PiCommand => {
  assertNodeVersion()
  if (options.extensionPath !== null && !isAbsolute(options.extensionPath)) {
    throw new Error(`pi-rpc: extensionPath must be absolute, got ${options.extensionPath}`)
  }
  const { sandbox } = options
  const args = [
    piCliPath(),
    "--mode",
    "rpc",
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--session-dir",
    sandbox.sessionDir,
    ...(options.discoverExtensions === true ? [] : ["--no-extensions"]),
    ...(options.extensionPath === null ? [] : ["-e", options.extensionPath]),
    "--no-skills",
    "--no-prompt-templates",
    "--no-context-files",
    "--offline",
    ...(options.sessionFile === undefined ? [] : ["--session", options.sessionFile]),
    ...(options.extraArgs ?? [])
  ]
  return { args, cwd: sandbox.workDir, env: sandboxEnv(sandbox, options.env) }
}

/** Pi's whole environment in the sandbox: nothing inherited but PATH, plus `extra`. */
export const sandboxEnv = (
  sandbox: PiSandbox,
  extra: Readonly<Record<string, string>> = {}
): Readonly<Record<string, string>> => ({
  PATH: process.env.PATH ?? "",
  PI_CODING_AGENT_DIR: sandbox.agentDir,
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
  HOME: sandbox.homeDir,
  ...extra
})
