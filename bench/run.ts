/**
 * `npm run bench`: runs every section in order, prints one markdown report and (unless
 * `--no-write`, `--quick` or `--only`) stores it as docs/bench.md. Flags: `--quick` (small smoke
 * run), `--only=store,scaling` (a subset), `--no-write`, `--help`. Exit code 1 when a hard check fails.
 */
import { execFileSync } from "node:child_process"
import {
  closeSync,
  fdatasyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync
} from "node:fs"
import { cpus, freemem, loadavg, release, tmpdir, totalmem } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import Sqlite from "better-sqlite3"
import { abortSection, piDeliverySection } from "./abort.ts"
import { memorySection } from "./memory.ts"
import { piChainSection, piStartupSection } from "./pi-responsiveness.ts"
import { scalingSection } from "./scaling.ts"
import { type BenchContext, type BenchSection, type Check, checkList, median, us } from "./section.ts"
import { storeSection } from "./store.ts"
import { telemetrySection } from "./telemetry.ts"

/** Every section, in report order; each measures goals of issue 25. */
const SECTIONS: ReadonlyArray<BenchSection> = [
  storeSection,
  scalingSection,
  memorySection,
  abortSection,
  piDeliverySection,
  piStartupSection,
  piChainSection,
  telemetrySection
]

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const quick = args.includes("--quick")
const only = args
  .find((a) => a.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",")
// docs/bench.md always holds a complete, full-size run.
const write = !quick && only === undefined && !args.includes("--no-write")

const packageVersion = (name: string): string => {
  try {
    const text = readFileSync(join(root, "node_modules", name, "package.json"), "utf8")
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && "version" in parsed ? String(parsed.version) : "?"
  } catch {
    return "?"
  }
}

const fileSystemOf = (dir: string): string => {
  try {
    const lines = execFileSync("df", ["-T", dir], { encoding: "utf8" }).trim().split("\n")
    return lines.at(-1)?.split(/\s+/)[1] ?? "?"
  } catch {
    return "?"
  }
}

/** The disk's commit cost right now: 4 KiB write + fdatasync, median of 100 (µs). */
const fdatasyncMedian = (dir: string): number => {
  const path = join(dir, "fdatasync-probe")
  const fd = openSync(path, "w")
  const block = Buffer.alloc(4096, 1)
  const samples: Array<number> = []
  try {
    for (let i = 0; i < 100; i++) {
      writeSync(fd, block, 0, block.length, 0)
      const start = performance.now()
      fdatasyncSync(fd)
      samples.push((performance.now() - start) * 1000)
    }
  } finally {
    closeSync(fd)
    rmSync(path, { force: true })
  }
  return median(samples)
}

const machineFacts = (tempRoot: string): string => {
  const db = new Sqlite(":memory:")
  const sqliteVersion = String(db.prepare("SELECT sqlite_version() AS v").pluck().get())
  db.close()
  const cpu = cpus()
  const gib = (bytes: number) => (bytes / 1024 ** 3).toFixed(1)
  return [
    `- Node ${process.version} (${process.platform}/${process.arch}), Linux ${release()}`,
    `- CPU: ${cpu[0]?.model.trim() ?? "?"}, ${cpu.length} cores; memory ${gib(totalmem())} GiB (${gib(freemem())} GiB free at start)`,
    `- Temp databases on ${fileSystemOf(tempRoot)} (${tmpdir()}); 4 KiB fdatasync median ${us(fdatasyncMedian(tempRoot))} µs ` +
      `at start; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")} (other processes share these cores and this disk)`,
    `- SQLite ${sqliteVersion} via better-sqlite3 ${packageVersion("better-sqlite3")}; effect ${packageVersion("effect")}, ` +
      `@effect/sql ${packageVersion("@effect/sql")}, @effect/sql-sqlite-node ${packageVersion("@effect/sql-sqlite-node")}`
  ].join("\n")
}

const main = async () => {
  if (args.includes("--help")) {
    process.stdout.write(
      `npm run bench [-- --quick] [--only=${SECTIONS.map((x) => x.id).join(",")}] [--no-write]\n`
    )
    return
  }
  const tempRoot = mkdtempSync(join(tmpdir(), "pwt-bench-"))
  const context: BenchContext = { tempRoot, quick, log: (line) => process.stderr.write(`${line}\n`) }
  const started = Date.now()
  const parts: Array<string> = []
  const checks: Array<Check> = []
  const goals: Array<Check> = []
  try {
    const facts = machineFacts(tempRoot)
    for (const section of SECTIONS) {
      if (only !== undefined && !only.includes(section.id)) continue
      context.log(`== ${section.title}`)
      const report = await section.run(context)
      parts.push(`## ${section.title}\n\n${report.markdown}`)
      checks.push(...report.checks)
      goals.push(...report.goals)
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(0)
    const document = [
      "# Benchmarks",
      "",
      `Latest \`npm run bench\` results (${new Date(started).toISOString()}, ${seconds} s${quick ? ", --quick" : ""}). ` +
        "Each goal is printed as a ratio or bound computed in this run, against a raw baseline measured in the " +
        "same run (better-sqlite3; `pg` running the same SQL for PostgreSQL, on a throwaway cluster the bench " +
        "starts and removes) or a fixed budget; absolute numbers only mean something on the machine below. " +
        "Speed is measured here and never asserted in tests.",
      "",
      `Run: \`npm run bench\` under Node 22 (bench/run.ts; \`--quick\` for a smoke run, \`--only=${SECTIONS.map((x) => x.id).join(",")}\` ` +
        "for a subset, `--no-write` to leave this file alone). The " +
        "Pi sections run the real Pi CLI on the built extension (dist/extension.js, rebuilt first when src/ is newer). " +
        "It exits 1 when a check fails (pragma and SQL parity with src, query plans, intents committed before the " +
        "abort, one fallback per run); a missed goal is reported, not fatal. Issue 25 kept only sections that " +
        "measure its goals: the breakdown of one store call, `list` with or without history indexes and the " +
        "PostgreSQL per-op walk and breakdown were dropped (git history has them and their last figures).",
      "",
      facts,
      "",
      ...parts.flatMap((p) => [p, ""]),
      "## Summary",
      "",
      "Goals:",
      "",
      checkList(goals),
      "",
      "Checks:",
      "",
      checkList(checks),
      ""
    ].join("\n")
    process.stdout.write(document)
    if (write) writeFileSync(join(root, "docs", "bench.md"), document)
    if (checks.some((c) => !c.ok)) process.exitCode = 1
  } finally {
    rmSync(tempRoot, { recursive: true, force: true })
  }
}

await main()
