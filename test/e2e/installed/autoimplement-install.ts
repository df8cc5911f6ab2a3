/**
 * A minimal pack-and-install helper for the autoimplement installed-package scenario: `npm pack`
 * of the built checkout, then `pi install` of the tarball into an isolated agent directory. npm
 * works from its cache with install scripts off; better-sqlite3's native addon, which those
 * scripts would compile, is copied from this checkout's build of the same version.
 */
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { piCliPath } from "../harness/pi-rpc.ts"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const NAME = "pi-workflow-turns"
const ADDON = join("build", "Release", "better_sqlite3.node")

const npmEnv = (extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv => ({
  ...process.env,
  npm_config_prefer_offline: "true",
  npm_config_ignore_scripts: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
  npm_config_cache: execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim(),
  ...extra
})

const run = (file: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv) => {
  try {
    return execFileSync(file, [...args], { cwd, env, encoding: "utf8", stdio: "pipe" })
  } catch (error) {
    const stderr =
      typeof error === "object" && error !== null && "stderr" in error ? String(error.stderr) : ""
    throw new Error(`${file} ${args.join(" ")} failed: ${stderr.slice(-3000) || String(error)}`)
  }
}

/** Pack the checkout (dist must be built: vitest's global setup builds it) into a temp dir. */
export const packTarball = (): { readonly tarball: string; readonly remove: () => void } => {
  if (!existsSync(join(ROOT, "dist", "extension.js")))
    throw new Error("dist/ is not built; run npm run build")
  const dir = mkdtempSync(join(tmpdir(), "pwt-ai-pack-"))
  const out = run("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], ROOT, npmEnv({}))
  const name = out.trim().split("\n").at(-1) ?? ""
  return { tarball: join(dir, name), remove: () => rmSync(dir, { recursive: true, force: true }) }
}

const copiesOf = (nodeModules: string, name: string): ReadonlyArray<string> => {
  if (!existsSync(nodeModules)) return []
  return readdirSync(nodeModules).flatMap((entry) => {
    const dir = join(nodeModules, entry)
    const nested = entry.startsWith("@")
      ? readdirSync(dir).flatMap((scoped) => copiesOf(join(dir, scoped, "node_modules"), name))
      : copiesOf(join(dir, "node_modules"), name)
    return entry === name ? [dir, ...nested] : nested
  })
}

/** `pi install` the tarball into `agentDir`; returns the installed package's directory. */
export const piInstallTarball = (tarball: string, agentDir: string, homeDir: string): string => {
  run(
    process.execPath,
    [piCliPath(), "install", `npm:${NAME}@file:${tarball}`],
    homeDir,
    npmEnv({
      PI_CODING_AGENT_DIR: agentDir,
      HOME: homeDir,
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0"
    })
  )
  const version = (dir: string) =>
    (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version?: string }).version
  const source = join(ROOT, "node_modules", "better-sqlite3")
  for (const dir of copiesOf(join(agentDir, "npm", "node_modules"), "better-sqlite3")) {
    if (existsSync(join(dir, ADDON))) continue
    if (version(dir) !== version(source))
      throw new Error(`better-sqlite3 ${version(dir)} installed, ${version(source)} built here`)
    mkdirSync(join(dir, "build", "Release"), { recursive: true })
    copyFileSync(join(source, ADDON), join(dir, ADDON))
  }
  const installed = join(agentDir, "npm", "node_modules", NAME)
  if (!existsSync(join(installed, "dist", "extension.js")))
    throw new Error(`pi install left no package at ${installed}`)
  return installed
}
