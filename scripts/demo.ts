/**
 * `npm run demo`: real Pi, headless (RPC mode), with this package's extension and a scripted
 * local model — no API key, nothing outside temp directories. It plays the end-to-end scenarios
 * of test/e2e/extension/scenarios.ts and prints, for each one, what the model saw, the life of
 * each turn intent from the controller database, and a final table: one successor per
 * interruption. Exits 0 only when every scenario behaved.
 *
 *   npm run demo                      # every scenario
 *   npm run demo -- self-cancel escape
 *   npm run demo -- --list
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { nodeVersionProblem } from "../src/node-version.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")

const nodeProblem = nodeVersionProblem(process.versions.node, "npm run demo")
if (nodeProblem !== null) {
  process.stderr.write(`${nodeProblem}\n`)
  process.exit(2)
}

// Imported after the version check: the harness refuses older Node with a less friendly error.
const { SCENARIOS, runScenario } = await import("../test/e2e/extension/scenarios.ts")
type ScenarioResult = Awaited<ReturnType<typeof runScenario>>

const argv = process.argv.slice(2)
// --keep or --keep=DIR: keep each scenario's controller database (DIR, else a new temp folder).
const keepArg = argv.find((arg) => arg === "--keep" || arg.startsWith("--keep="))
const args = argv.filter((arg) => arg !== keepArg)
if (args.includes("--list") || args.includes("--help")) {
  process.stdout.write(
    "usage: npm run demo [-- [--keep[=DIR]] <scenario id>...]\n" +
      "  --keep[=DIR]  keep each scenario's controller database (in DIR, else a new temp folder)\n\nscenarios:\n"
  )
  for (const s of SCENARIOS) process.stdout.write(`  ${s.id.padEnd(18)} ${s.title}\n`)
  process.exit(0)
}
const unknown = args.filter((id) => !SCENARIOS.some((s) => s.id === id))
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario(s): ${unknown.join(", ")} (see npm run demo -- --list)\n`)
  process.exit(2)
}
const selected = args.length === 0 ? SCENARIOS : SCENARIOS.filter((s) => args.includes(s.id))
const keepDir =
  keepArg === undefined
    ? null
    : keepArg === "--keep"
      ? mkdtempSync(join(tmpdir(), "pwt-demo-"))
      : resolve(keepArg.slice("--keep=".length))
if (keepDir !== null) mkdirSync(keepDir, { recursive: true })
/** Where a kept scenario's database goes. */
const keptDb = (id: string): string | undefined => (keepDir === null ? undefined : join(keepDir, `${id}.db`))

// Pi loads the bundle package.json names in `pi.extensions`: build it from the current sources.
execFileSync(process.execPath, [join(ROOT, "scripts", "build.mjs")], { cwd: ROOT, stdio: "inherit" })

const out = (line = "") => process.stdout.write(`${line}\n`)
const piVersion = (): string => {
  const pkg: unknown = JSON.parse(
    readFileSync(join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent", "package.json"), "utf8")
  )
  return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string"
    ? pkg.version
    : "?"
}

const clock = (iso: string) => iso.slice(11, 23)
const since = (from: string, to: string) => `+${Date.parse(to) - Date.parse(from)} ms`
const shortId = (id: string) => (id.length > 26 ? `${id.slice(0, 26)}…` : id)
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

const printScenario = (result: ScenarioResult, index: number) => {
  const { scenario, observation } = result
  out(`━━ ${index + 1}/${selected.length}  ${scenario.id}: ${scenario.title}`)
  if (observation !== null) {
    const customTypeOf = new Map(observation.messages.map((m) => [m.firstLine, m.customType]))
    out("  what the model saw (newest message of each request) → what the scripted model did")
    for (const request of observation.requests) {
      const firstLine = request.trigger.replace(/^[a-z]+: /, "")
      const custom = customTypeOf.get(firstLine)
      const tag = custom === undefined ? "" : ` [${custom}]`
      const aborted = request.outcome === "clientClosed" ? "  ✂ turn aborted before the reply" : ""
      out(`    #${request.index + 1} ${request.trigger}${tag}`)
      out(`        → ${request.reply}${aborted}`)
    }
    for (const text of observation.notices) out(`  the user saw: ${text.split("\n")[0] ?? ""}`)
    if (observation.intents.length === 0) out("  turn intents: none")
    for (const intent of observation.intents) {
      out(
        `  turn intent ${shortId(intent.intentId)}  cause ${intent.cause} · node ${intent.nodeId ?? "—"} · observed ${intent.observedState}`
      )
      if (intent.reason !== null) out(`      reason   ${intent.reason}`)
      out(`      created  ${clock(intent.requestedAt)}`)
      if (intent.eligibleAt !== null)
        out(`      eligible ${clock(intent.eligibleAt)}  ${since(intent.requestedAt, intent.eligibleAt)}`)
      else out("      eligible never (a natural message resolved it first)")
      if (intent.claimedAt !== null)
        out(`      claimed  ${clock(intent.claimedAt)}  ${since(intent.requestedAt, intent.claimedAt)}`)
      if (intent.resolvedAt !== null) {
        out(
          `      resolved ${clock(intent.resolvedAt)}  ${since(intent.requestedAt, intent.resolvedAt)}  by ${intent.resolution ?? "?"}`
        )
      } else out("      resolved — still pending")
    }
    for (const run of observation.runs)
      out(`  run ${run.runId} (${run.workflow}): ${run.state}${run.error === null ? "" : ` — ${run.error}`}`)
  }
  for (const check of result.checks) out(`  ${check.ok ? "✓" : "✗"} ${check.what}`)
  const numbers =
    result.summary === null
      ? ""
      : ` (${plural(result.summary.requests, "request")} · ${plural(result.summary.steps, "step")} · ` +
        `${plural(result.summary.presentations, "presentation")} · ${plural(result.summary.fallbacks, "fallback")})`
  out(`  ${result.failures.length === 0 ? "PASS" : "FAIL"}  ${seconds(result.durationMs)}${numbers}`)
  for (const failure of result.failures) out(`    ✗ ${failure}`)
  const kept = keptDb(scenario.id)
  if (kept !== undefined) out(`  database kept: node dist/cli.js runs --db ${kept}`)
  out()
}

/** Per intent: how many session messages carry its ID, and the path that resolved it. */
const successorCell = (result: ScenarioResult): string => {
  const observation = result.observation
  if (observation === null) return "?"
  if (observation.intents.length === 0) return "—"
  return observation.intents
    .map((intent) => {
      const carriers = observation.messages.filter((m) => m.turnIntentId === intent.intentId).length
      return `${carriers} × ${intent.resolution ?? "pending"}`
    })
    .join(", ")
}

out(
  `pi-workflow-turns demo — Pi ${piVersion()} in RPC mode, Node ${process.versions.node}, scripted local model`
)
out("Each scenario: a fresh temp sandbox (agent dir, sessions, controller DB), real Pi, the built extension.")
out()

const results: Array<ScenarioResult> = []
for (const [index, scenario] of selected.entries()) {
  const keepDbAs = keptDb(scenario.id)
  const result = await runScenario(scenario, undefined, keepDbAs === undefined ? {} : { keepDbAs })
  results.push(result)
  printScenario(result, index)
}

const rows = results.map((r) => [
  r.scenario.id,
  r.scenario.interruption,
  String(r.observation?.intents.length ?? "?"),
  successorCell(r),
  String(r.summary?.fallbacks ?? "?"),
  String(r.summary?.requests ?? "?"),
  seconds(r.durationMs),
  r.failures.length === 0 ? "PASS" : "FAIL"
])
const header = [
  "scenario",
  "interruption",
  "intents",
  "successor per intent",
  "fallbacks",
  "requests",
  "time",
  "result"
]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)))
const line = (cells: ReadonlyArray<string>) =>
  cells
    .map((cell, i) => cell.padEnd(widths[i] ?? 0))
    .join("  ")
    .trimEnd()
out(line(header))
out(line(widths.map((w) => "─".repeat(w))))
for (const row of rows) out(line(row))
out()

const failed = results.filter((r) => r.failures.length > 0)
const total = results.reduce((sum, r) => sum + r.durationMs, 0)
if (failed.length === 0) {
  out(
    `All ${results.length} scenario(s) behaved in ${seconds(total)}: each interruption that owes a turn got exactly`
  )
  out("one successor (a recovery prompt or one fallback); the paths that owe none got no extra turn.")
  out()
  out("Where to look next:")
  const last = results.at(-1)
  const db = last === undefined ? undefined : keptDb(last.scenario.id)
  if (db === undefined) {
    out("  npm run demo -- --keep             keep each scenario's controller database, then read one with")
    out(
      "                                     node dist/cli.js doctor --db <file> (the `pi-workflow-turns` bin"
    )
    out("                                     once installed; docs/cli.md)")
  } else {
    out(`  the controller databases of these scenarios are kept in ${keepDir}; read one with the CLI:`)
    out(`    node dist/cli.js doctor --db ${db}`)
    out(`    node dist/cli.js runs --db ${db}`)
    out(`    node dist/cli.js intents --db ${db}`)
  }
  out('  README.md "Use it in Pi"           install the extension in your own Pi')
  out("  docs/reliability.md                what is guaranteed, and what happens on a crash")
  process.exit(0)
}
out(
  `${failed.length} of ${results.length} scenario(s) failed: ${failed.map((r) => r.scenario.id).join(", ")}`
)
process.exit(1)
