/**
 * The contract between the bench entry and its sections, and what every section reports with:
 * latency statistics (nearest-rank percentiles over per-op samples in µs) and markdown tables.
 * A section returns markdown plus the checks and goals it evaluated, so the entry only orders,
 * prints and records them. The real-Pi sections share the built extension, rebuilt when a
 * source file is newer than it, so the bench always measures the code in src.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export interface BenchContext {
  /** A directory of this run, removed at the end; sections create their databases below it. */
  readonly tempRoot: string
  /** Fewer ops per measurement (a smoke run of the bench itself, not for docs/). */
  readonly quick: boolean
  /** Progress output (stderr), not part of the report. */
  readonly log: (line: string) => void
}

export interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

export interface SectionReport {
  /** Markdown body under the section's heading. */
  readonly markdown: string
  /** Hard checks (query plans use the partial indexes, SQL parity); a failure fails the run. */
  readonly checks: ReadonlyArray<Check>
  /** Performance goals; a miss is reported and explained, it does not fail the run. */
  readonly goals: ReadonlyArray<Check>
}

export interface BenchSection {
  readonly id: string
  readonly title: string
  readonly run: (context: BenchContext) => Promise<SectionReport>
}

export const mark = (ok: boolean): string => (ok ? "✅" : "❌")

/** Checks or goals as a markdown list. */
export const checkList = (checks: ReadonlyArray<Check>): string =>
  checks.map((c) => `- ${mark(c.ok)} ${c.name}: ${c.detail}`).join("\n")

export interface Summary {
  readonly median: number
  readonly p99: number
  readonly count: number
}

const sortedCopy = (samples: ArrayLike<number>): Float64Array => Float64Array.from(samples).sort()

/** Nearest-rank percentile (p in 0…100) of already sorted values. */
export const percentileSorted = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN
}

export const median = (values: ArrayLike<number>): number => {
  const sorted = sortedCopy(values)
  const n = sorted.length
  if (n === 0) return Number.NaN
  const mid = n >> 1
  return n % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

export const summarize = (samples: ArrayLike<number>): Summary => {
  const sorted = sortedCopy(samples)
  return { median: median(sorted), p99: percentileSorted(sorted, 99), count: sorted.length }
}

/** Combine rounds: the median of the per-round medians and of the per-round p99s. */
export const combineRounds = (rounds: ReadonlyArray<Summary>): Summary => ({
  median: median(rounds.map((r) => r.median)),
  p99: median(rounds.map((r) => r.p99)),
  count: rounds.reduce((sum, r) => sum + r.count, 0)
})

/** µs with precision that suits the magnitude. */
export const us = (value: number): string =>
  !Number.isFinite(value)
    ? "—"
    : value >= 1000
      ? value.toFixed(0)
      : value >= 100
        ? value.toFixed(0)
        : value >= 10
          ? value.toFixed(1)
          : value.toFixed(2)

export const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "—")

/** A markdown table from a header row and body rows. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")
const EXTENSION = join(ROOT, "dist", "extension.js")

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
