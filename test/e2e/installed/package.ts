/**
 * The package as its users get it, for tests that must not look at the source tree: `npm pack`
 * of the built package, the tarball installed into a fresh npm project (a downstream program),
 * or installed with `pi install` into an isolated Pi agent directory (a Pi user).
 *
 * npm resolves the tarball's dependencies from its cache (`prefer-offline`: the registry only on
 * a cache miss). Install scripts are off: better-sqlite3's would compile its native addon for a
 * minute on this machine, so the addon this checkout already built for the same version is copied
 * in instead (`provideNativeAddon`). Nothing else of the checkout is used.
 */
import { execFile, execFileSync } from "node:child_process"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Schema } from "effect"
import { piCliPath } from "../harness/pi-sandbox.ts"

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
export const PACKAGE_NAME = "pi-workflow-turns"

const PackResult = Schema.Array(
  Schema.Struct({
    filename: Schema.String,
    size: Schema.Number,
    unpackedSize: Schema.Number,
    files: Schema.Array(Schema.Struct({ path: Schema.String, size: Schema.Number }))
  })
)

export interface PackedPackage {
  /** Absolute path of the `.tgz`. */
  readonly tarball: string
  readonly packedBytes: number
  readonly unpackedBytes: number
  /** Paths inside the package, e.g. `dist/index.js`. */
  readonly files: ReadonlyArray<string>
  /** Remove the directory holding the tarball. */
  remove(): void
}

/** One npm invocation's environment: cache first, no scripts, no advice, no update check. */
export const npmEnv = (extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  npm_config_prefer_offline: "true",
  npm_config_ignore_scripts: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
  npm_config_loglevel: "error",
  // Pi runs npm with a sandboxed HOME; keep npm on the machine's cache so nothing is fetched twice.
  npm_config_cache: npmCacheDir(),
  ...extra
})

let cacheDir: string | undefined
const npmCacheDir = (): string => {
  cacheDir ??= execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim()
  return cacheDir
}

const run = promisify(execFile)

/** Async, so a test worker stays responsive while npm works (installs take many seconds). */
const npm = async (args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  try {
    const { stdout } = await run("npm", [...args], { cwd, env: npmEnv(), maxBuffer: 64 * 1024 * 1024 })
    return stdout
  } catch (error) {
    throw new Error(`npm ${args.join(" ")} (in ${cwd}) failed: ${describeExecError(error)}`)
  }
}

const describeExecError = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "stderr" in error) {
    const stderr = String(error.stderr)
    const stdout = "stdout" in error ? String(error.stdout) : ""
    return `${stderr}\n${stdout}`.trim().slice(-4000)
  }
  return error instanceof Error ? error.message : String(error)
}

/**
 * `npm pack` the package as it is on disk. It does not build: run `npm run build` first (vitest's
 * global setup does), so parallel test files never rewrite `dist/` under each other.
 */
export const packPackage = async (): Promise<PackedPackage> => {
  for (const entry of ["dist/index.js", "dist/extension.js"]) {
    if (!existsSync(join(ROOT, entry)))
      throw new Error(`packPackage: ${entry} is missing; run npm run build first`)
  }
  const dir = mkdtempSync(join(tmpdir(), "pwt-pack-"))
  try {
    const out = await npm(["pack", "--json", "--ignore-scripts", "--pack-destination", dir], ROOT)
    // npm may print notices before the JSON array.
    const [result] = Schema.decodeUnknownSync(Schema.parseJson(PackResult))(out.slice(out.indexOf("[")))
    if (result === undefined) throw new Error("npm pack reported no package")
    return {
      tarball: join(dir, result.filename),
      packedBytes: result.size,
      unpackedBytes: result.unpackedSize,
      files: result.files.map((file) => file.path),
      remove: () => rmSync(dir, { recursive: true, force: true })
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/** The native addon file better-sqlite3 loads (`bindings` looks in build/Release first). */
const ADDON = join("build", "Release", "better_sqlite3.node")

const versionOf = (packageDir: string): string | undefined => {
  const file = join(packageDir, "package.json")
  if (!existsSync(file)) return undefined
  const pkg: unknown = JSON.parse(readFileSync(file, "utf8"))
  return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string"
    ? pkg.version
    : undefined
}

/**
 * Give every better-sqlite3 installed under `root` the addon this checkout built. Fails when the
 * versions differ, rather than loading an addon built for another version.
 */
export const provideNativeAddon = (root: string): void => {
  const source = join(ROOT, "node_modules", "better-sqlite3")
  const sourceVersion = versionOf(source)
  for (const dir of installedCopies(root, "better-sqlite3")) {
    if (existsSync(join(dir, ADDON))) continue
    const version = versionOf(dir)
    if (version !== sourceVersion) {
      throw new Error(
        `provideNativeAddon: ${dir} is better-sqlite3 ${version}, this checkout built ${sourceVersion}`
      )
    }
    mkdirSync(join(dir, "build", "Release"), { recursive: true })
    copyFileSync(join(source, ADDON), join(dir, ADDON))
  }
}

export interface ConsumerProject {
  readonly dir: string
  /** The installed package's directory (`node_modules/pi-workflow-turns`). */
  readonly packageDir: string
  remove(): void
}

export interface ConsumerOptions {
  /** Extra dependencies of the downstream project, name → version range (e.g. its own `effect`). */
  readonly dependencies?: Readonly<Record<string, string>>
  /** Files to write into the project, path relative to it → contents. */
  readonly files?: Readonly<Record<string, string>>
}

/** A fresh npm project (ESM) that installs the tarball and `dependencies`, like a downstream user. */
export const installConsumer = async (
  tarball: string,
  options: ConsumerOptions = {}
): Promise<ConsumerProject> => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-consumer-"))
  try {
    const pkg = {
      name: "pwt-consumer",
      private: true,
      type: "module",
      dependencies: { ...options.dependencies, [PACKAGE_NAME]: `file:${tarball}` }
    }
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`)
    for (const [path, text] of Object.entries(options.files ?? {})) {
      mkdirSync(dirname(join(dir, path)), { recursive: true })
      writeFileSync(join(dir, path), text)
    }
    await npm(["install"], dir)
    provideNativeAddon(dir)
    return {
      dir,
      packageDir: join(dir, "node_modules", PACKAGE_NAME),
      remove: () => rmSync(dir, { recursive: true, force: true })
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/** Where a Pi agent directory keeps what `pi install npm:…` installed. */
export const piInstalledPackageDir = (agentDir: string): string =>
  join(agentDir, "npm", "node_modules", PACKAGE_NAME)

/**
 * `pi install` the tarball into the agent directory `agentDir` (what `PI_CODING_AGENT_DIR` names)
 * with the real Pi CLI, as a user installs a package: Pi runs npm into `<agentDir>/npm` and records
 * the source in `<agentDir>/settings.json`. Returns the installed package's directory.
 */
export const piInstall = async (tarball: string, agentDir: string, homeDir: string): Promise<string> => {
  try {
    await run(process.execPath, [piCliPath(), "install", `npm:${PACKAGE_NAME}@file:${tarball}`], {
      cwd: homeDir,
      env: npmEnv({
        PI_CODING_AGENT_DIR: agentDir,
        HOME: homeDir,
        PI_SKIP_VERSION_CHECK: "1",
        PI_TELEMETRY: "0"
      }),
      maxBuffer: 64 * 1024 * 1024
    })
  } catch (error) {
    throw new Error(`pi install failed: ${describeExecError(error)}`)
  }
  provideNativeAddon(join(agentDir, "npm"))
  const installed = piInstalledPackageDir(agentDir)
  if (!existsSync(join(installed, "package.json")))
    throw new Error(`pi install left no package at ${installed}`)
  return installed
}

/** Every installed copy of `name` under `root/node_modules`, nested ones included (`npm ls` view). */
export const installedCopies = (root: string, name: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const walk = (nodeModules: string) => {
    if (!existsSync(nodeModules)) return
    for (const entry of readdirSync(nodeModules)) {
      const dir = join(nodeModules, entry)
      if (entry.startsWith("@")) {
        for (const scoped of readdirSync(dir)) {
          if (`${entry}/${scoped}` === name) found.push(join(dir, scoped))
          walk(join(dir, scoped, "node_modules"))
        }
        continue
      }
      if (entry === name) found.push(dir)
      walk(join(dir, "node_modules"))
    }
  }
  walk(join(root, "node_modules"))
  return found
}
