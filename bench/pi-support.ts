/**
 * Shared by the real-Pi sections: the built extension (`pi.extensions` → dist/extension.js),
 * rebuilt when any source file is newer than it, so the bench always measures the code in src.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")
export const EXTENSION = join(ROOT, "dist", "extension.js")

const newestMtime = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    const mtime = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs
    return Math.max(newest, mtime)
  }, 0)

const mtimeOf = (path: string): number => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return 0
  }
}

/** dist/extension.js, built first (`npm run build`) when missing or older than src/ or the build script. */
export const builtExtension = (log: (line: string) => void): string => {
  const sources = Math.max(newestMtime(join(ROOT, "src")), mtimeOf(join(ROOT, "scripts", "build.mjs")))
  if (mtimeOf(EXTENSION) < sources) {
    log("  dist/extension.js is older than src/: running scripts/build.mjs")
    execFileSync(process.execPath, [join(ROOT, "scripts", "build.mjs")], { cwd: ROOT, stdio: "inherit" })
  }
  return EXTENSION
}

/** A Pi RPC record's arrival, timestamped by the bench as it reads the child's stdout. */
export interface Arrival {
  readonly at: number
  readonly record: Readonly<Record<string, unknown>>
}

/**
 * Timestamp every JSON line of a child's stdout (the harness keeps records but not times). Both
 * events of a latency pair travel the same pipe, so their difference is Pi's, not the pipe's.
 */
export const timestampLines = (stdout: NodeJS.ReadableStream): ReadonlyArray<Arrival> => {
  const arrivals: Array<Arrival> = []
  let buffer = ""
  stdout.on("data", (chunk: string | Buffer) => {
    const at = performance.now()
    buffer += chunk.toString()
    let newline = buffer.indexOf("\n")
    while (newline >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      try {
        const parsed: unknown = JSON.parse(line)
        if (typeof parsed === "object" && parsed !== null) arrivals.push({ at, record: { ...parsed } })
      } catch {
        // Not an RPC record; the harness reports those.
      }
      newline = buffer.indexOf("\n")
    }
  })
  return arrivals
}
