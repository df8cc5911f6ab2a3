/**
 * `npm run check:model`: model-check the delivery protocol (model/delivery.pml) with Spin.
 *
 * The model's constants are generated here from src/delivery/protocol.ts, so the model checks
 * the lease, write-delay bound and send order the code uses. Each check states what it must
 * find: the code's protocol must verify; the old protocol and each variant with one condition
 * removed must produce a counterexample (a model that proves nothing is caught that way).
 * Installs `spin` and `gcc` with apt-get when they are missing and this runs as root.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  DEFAULT_LEASE_MS,
  modelConstants,
  RELEASE_OTHERS_BEFORE_SEND,
  RENEW_BEFORE_SEND,
  WRITE_DELAY_BOUND_MS
} from "../src/delivery/protocol.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const quiet = process.argv.includes("--quiet")

const has = (tool: string): boolean => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
if (!has("spin") || !has("gcc")) {
  if (process.getuid?.() !== 0) {
    console.error("check:model needs spin and gcc (apt-get install -y spin gcc)")
    process.exit(2)
  }
  execFileSync("sh", [
    "-c",
    "(apt-get install -y -qq spin gcc || (apt-get update -qq && apt-get install -y -qq spin gcc)) >/dev/null 2>&1"
  ])
}

const derived = modelConstants(DEFAULT_LEASE_MS, WRITE_DELAY_BOUND_MS)

interface Check {
  readonly name: string
  readonly expect: "verified" | "counterexample"
  readonly defines: Readonly<Record<string, number>>
  /** "safety": assertions (one message per intent, resolved => in the branch); else an LTL claim. */
  readonly property: "safety" | "all_resolved"
}

const protocol = {
  LEASE: derived.lease,
  WDELAY: derived.writeDelay,
  RENEW_BEFORE_SEND: RENEW_BEFORE_SEND ? 1 : 0,
  RELEASE_OTHERS_BEFORE_SEND: RELEASE_OTHERS_BEFORE_SEND ? 1 : 0,
  RESOLVE_ON_BRANCH: 1,
  DEAD_OWNERS: 1,
  MAXF: 0,
  USER_TURNS: 0,
  NATURALS: 0
}

/** The default set (well under a minute on an idle machine); `--full` adds the larger ones. */
const full = process.argv.includes("--full")

const allChecks: ReadonlyArray<Check & { readonly large?: true }> = [
  { name: "protocol: safety, fallback path", expect: "verified", property: "safety", defines: protocol },
  {
    name: "protocol: safety, both paths, a user turn",
    expect: "verified",
    large: true,
    property: "safety",
    defines: { ...protocol, NATURALS: 1, USER_TURNS: 1 }
  },
  {
    name: "protocol: liveness (weak fairness), fallback path, no fault",
    expect: "verified",
    large: true,
    property: "all_resolved",
    defines: { ...protocol, MAXF: 0 }
  },
  {
    name: "self-test: the old protocol (resolve at the send) is caught",
    expect: "counterexample",
    property: "safety",
    defines: { ...protocol, RESOLVE_ON_BRANCH: 0, RENEW_BEFORE_SEND: 0, RELEASE_OTHERS_BEFORE_SEND: 0 }
  },
  {
    name: "condition 1 removed (Pi writes after the lease ran out) gives a duplicate",
    expect: "counterexample",
    property: "safety",
    defines: { ...protocol, PI_WDELAY: derived.lease + 1 }
  },
  {
    name: "condition 2 removed (no renewal right before the send) gives a duplicate",
    expect: "counterexample",
    property: "safety",
    defines: { ...protocol, RENEW_BEFORE_SEND: 0, NATURALS: 1, USER_TURNS: 1 }
  },
  {
    name: "condition 3 removed (others released after the send) gives a duplicate",
    expect: "counterexample",
    property: "safety",
    defines: { ...protocol, RELEASE_OTHERS_BEFORE_SEND: 0 }
  }
]

const checks = allChecks.filter((check) => full || check.large !== true)
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length)
let failed = 0
const started = performance.now()
console.log(
  `model constants from src/delivery/protocol.ts: lease ${DEFAULT_LEASE_MS} ms -> ${derived.lease} ticks, ` +
    `write-delay bound ${WRITE_DELAY_BOUND_MS} ms -> ${derived.writeDelay} tick`
)
for (const [index, check] of checks.entries()) {
  if (only !== undefined && !check.name.includes(only)) continue
  const dir = mkdtempSync(join(tmpdir(), "pwt-model-"))
  try {
    copyFileSync(join(root, "model", "delivery.pml"), join(dir, "delivery.pml"))
    writeFileSync(
      join(dir, "constants.pml"),
      Object.entries(check.defines)
        .map(([key, value]) => `#define ${key} ${value}\n`)
        .join("")
    )
    const t0 = performance.now()
    execFileSync("spin", ["-a", "delivery.pml"], { cwd: dir, stdio: "ignore" })
    const flags = check.property === "safety" ? ["-DSAFETY", "-DNOCLAIM"] : ["-DNOFAIR"]
    execFileSync(
      "gcc",
      ["-O2", "-w", ...flags.filter((f) => f !== "-DNOFAIR"), "-DNOBOUNDCHECK", "-o", "pan", "pan.c"],
      {
        cwd: dir
      }
    )
    const panArgs =
      check.property === "safety" ? ["-E", "-m2000000"] : ["-a", "-f", "-m2000000", "-N", check.property]
    const run = spawnSync("./pan", panArgs, { cwd: dir, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    const out = `${run.stdout}${run.stderr}`
    const errors = Number(/errors: (\d+)/.exec(out)?.[1] ?? Number.NaN)
    const states = /(\d+) states, stored/.exec(out)?.[1] ?? "?"
    const seconds = ((performance.now() - t0) / 1_000).toFixed(1)
    const found = errors > 0 ? "counterexample" : errors === 0 ? "verified" : "no result"
    const ok = found === check.expect
    if (!ok) failed++
    console.log(`${ok ? "ok  " : "FAIL"} ${check.name}: ${found}, ${states} states, ${seconds} s`)
    if (found === "counterexample" && (!ok || !quiet)) {
      const trail = spawnSync("spin", ["-t", "delivery.pml"], { cwd: dir, encoding: "utf8" })
      const steps = trail.stdout
        .split("\n")
        .filter((line) => line.includes("MSC:"))
        .map((line) => `      ${line.trim().replace(/^MSC: /, "")}`)
      if (!ok || process.argv.includes("--trails")) console.log(steps.join("\n"))
      else console.log(`      (${steps.length} steps; --trails prints them; ${index})`)
    }
    if (found === "no result") console.log(out.slice(-2_000))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
console.log(
  `check:model ${failed === 0 ? "passed" : `FAILED (${failed})`} in ${((performance.now() - started) / 1_000).toFixed(1)} s`
)
process.exit(failed === 0 ? 0 : 1)
