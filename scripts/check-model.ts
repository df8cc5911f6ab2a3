/**
 * `npm run check:model`: model-check the delivery protocol (model/delivery.pml) with Spin.
 *
 * The model's constants are generated here from src/delivery/protocol.ts, so the model checks
 * the lease, write-delay bound and send order the code uses. Each check states what it must
 * find: the code's protocol must verify (safety with every fault kind, liveness under weak
 * fairness); the old protocol and each variant with one condition or rule removed must produce
 * a counterexample of the property it is about (a model that proves nothing is caught that
 * way). `--full` adds the larger searches, `--only=<text>` selects checks by name, `--trails`
 * prints every counterexample. Searches run one per core. Installs `spin` and `gcc` with
 * apt-get when they are missing and this runs as root. docs/protocol.md lists the checks.
 *
 * The step reminders have their own model (model/reminders.pml, checks named "reminders: …"):
 * the store take, the branch scan and the pending-intent check of src/app/step-reminders.ts
 * against two processes, a crash, a lost message and an interruption; MAX_REMINDERS comes from
 * src/domain/step-reminder.ts.
 *
 * The waiting presentation has one too (model/waiting.pml, checks named "waiting…"): the
 * presentation of a wait reached by a timed-out step claims and resolves the timeout's pending
 * intent (natural delivery), is sent `once` (recover's resend checks the branch), and must stay
 * the intent's one answer beside the fallback pass, a crash, a lost message and the late prompt
 * of the step after the answer. The self-tests remove the claim, the `once` check or the
 * resolve-on-branch rule; the findings show where the code does not keep (a) or (b).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { MAX_REMINDERS } from "../src/domain/step-reminder.ts"
import { DEFAULT_LEASE_MS } from "../src/domain/timing-policy.ts"
import {
  modelConstants,
  NATURAL_OUTSIDE_SETTLE_HANDLER,
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

type Model = "delivery.pml" | "reminders.pml" | "waiting.pml"

/** The files of each model (constants.pml is written per check). */
const modelFiles: Readonly<Record<Model, ReadonlyArray<string>>> = {
  "delivery.pml": ["delivery.pml", "environment.pml"],
  "reminders.pml": ["reminders.pml"],
  "waiting.pml": ["waiting.pml"]
}

interface Check {
  readonly name: string
  /** The model file; default delivery.pml. */
  readonly model?: Model
  readonly expect: "verified" | "counterexample"
  readonly defines: Readonly<Record<string, number>>
  /**
   * "safety": the assertions (delivery: one message per intent, resolved => in the branch, one
   * terminal turn per run; reminders: (a) to (d) of model/reminders.pml; waiting: (a) to (c) of
   * model/waiting.pml); "all_resolved": the
   * LTL claim of delivery.pml, under weak fairness.
   */
  readonly property: "safety" | "all_resolved"
  /** Only with `--full` (too slow for the default run); the time measured is in docs/protocol.md. */
  readonly full?: true
  /** Millions of states: worth an optimized build. */
  readonly large?: true
  /** What a counterexample must violate, so a variant cannot pass on an unrelated failure. */
  readonly violates?: Violation
}

/** The model's properties, as pan names what a counterexample violated. */
const violations = {
  duplicate: /^\(br\[\(k%2\)\]<=1\)/,
  resolvedWithoutMessage: /^\(!\(ok\)\|\|\(br\[\w+\]>0\)\)/,
  secondTerminalTurn: /^\(\(br\[0\]\+plain\)<=1\)/,
  unresolved: /^acceptancecycle/,
  /** reminders.pml (a): more than MAX_REMINDERS reminders, or one ordinal twice, in the branch. */
  reminderTwice: /^\(\(reminderTotal<=\d+\)&&\(reminded\[o\]<=1\)\)/,
  /** (b): one settle handler sent the fallback and a reminder. */
  reminderWithSuccessor: /^!\(answeredBySuccessor\[c\]\)/,
  /** (c): a reminder sent while an intent the handler saw pending is unresolved. */
  reminderWhileSeenPending: /^!\(\(sawPendingIntent\[c\]&&\(intent==1\)\)\)/,
  /** (d), only with STRICT_PENDING: a reminder sent while any intent of the run is pending. */
  reminderWhilePending: /^\(intent!=1\)/,
  /** waiting.pml (a): two answers to the intent in the branch (presentation, fallback, prompt with it). */
  answeredTwice: /^\(\(\(\(\(\(\(presI\+presPlain\)>0\)\)\?\(1\):\(0\)\)\+fb\)\+promptI\)<=1\)/,
  /** (b): the waiting presentation twice in the branch (one request ID). */
  presentedTwice: /^\(\(presI\+presPlain\)<=1\)/,
  /** (c): the intent resolved while its message of that resolution is not in the branch. */
  resolvedWithoutItsMessage: /^\(\(\(\(\(.*==1\)&&\(presI>0\)\)/
} as const
type Violation = keyof typeof violations

const violated = (out: string): Violation | "other" => {
  const what = (
    /assertion violated (.*)/.exec(out)?.[1] ?? (/acceptance cycle/.test(out) ? "acceptance cycle" : "")
  ).replace(/\s/g, "")
  const hit = (Object.keys(violations) as Violation[]).find((key) => violations[key].test(what))
  return hit ?? "other"
}

/** The fault kinds of the model (model/delivery.pml F_*). */
const F_CRASH = 1
const F_REFUSE = 2
const F_HANG = 4
const F_LOSE = 8
const ALL_FAULTS = F_CRASH | F_REFUSE | F_HANG | F_LOSE

/**
 * The code's protocol: both delivery paths (run 0's presentation through natural delivery, both
 * intents through the fallback pass), two coordinators, two intents, and at most one fault of
 * any kind at any step.
 */
const protocol = {
  LEASE: derived.lease,
  WDELAY: derived.writeDelay,
  RENEW_BEFORE_SEND: RENEW_BEFORE_SEND ? 1 : 0,
  RELEASE_OTHERS_BEFORE_SEND: RELEASE_OTHERS_BEFORE_SEND ? 1 : 0,
  RESOLVE_ON_BRANCH: 1,
  NAT_OUTSIDE_HANDLER: NATURAL_OUTSIDE_SETTLE_HANDLER ? 1 : 0,
  PRESENT_PLAIN: 0,
  LOST_RELEASE: 1,
  DEAD_OWNERS: 1,
  FAULTS: ALL_FAULTS,
  MAXF: 1,
  USER_TURNS: 0,
  NATURALS: 1
}

/**
 * The step reminders as the code has them: two processes, every settle seen by both (as in the
 * delivery model), three settles, one interruption, one crash, one lost message.
 */
const reminders = {
  MAXR: MAX_REMINDERS,
  NP: 2,
  SETTLES: MAX_REMINDERS + 1,
  INTENTS: 1,
  CRASHES: 1,
  LOSSES: 1,
  TAKE: 1,
  SEND_BEFORE_TAKE: 0,
  PENDING_CHECK: 1,
  SYNC_SKIP: 1,
  ASSERT_C: 1,
  STRICT_PENDING: 0
}

/**
 * The waiting presentation as the code sends it, where the code keeps (a) to (c): recover resends
 * at a restart, the answer comes to a question the branch shows; one crash, one lost message.
 */
const waiting = {
  CRASHES: 1,
  LOSSES: 1,
  ONCE: 1,
  CLAIM: 1,
  FB_CHECK: 1,
  PERIODIC: 0,
  EARLY_ANSWER: 0,
  ELIG: 1,
  INTENT: 1,
  RESOLVE_AT_SEND: 0,
  WITHHOLD: 1
}

const full = process.argv.includes("--full")

const allChecks: ReadonlyArray<Check> = [
  {
    name: "protocol: safety, both paths, every fault kind",
    expect: "verified",
    property: "safety",
    large: true,
    defines: protocol
  },
  {
    name: "protocol: liveness, both paths, no fault",
    expect: "verified",
    property: "all_resolved",
    defines: { ...protocol, MAXF: 0 }
  },
  {
    name: "protocol: liveness, fallback path, every fault kind",
    expect: "verified",
    property: "all_resolved",
    defines: { ...protocol, NATURALS: 0 }
  },
  {
    name: "self-test: the old protocol (resolve at the send) is caught",
    expect: "counterexample",
    violates: "resolvedWithoutMessage",
    property: "safety",
    defines: { ...protocol, RESOLVE_ON_BRANCH: 0, RENEW_BEFORE_SEND: 0, RELEASE_OTHERS_BEFORE_SEND: 0 }
  },
  {
    name: "condition 1 removed (Pi writes after the lease ran out) gives a duplicate",
    expect: "counterexample",
    violates: "duplicate",
    property: "safety",
    defines: { ...protocol, PI_WDELAY: derived.lease + 1 }
  },
  {
    name: "condition 2 removed (no renewal right before the send) gives a duplicate",
    expect: "counterexample",
    violates: "duplicate",
    property: "safety",
    // Only a slow store call makes natural delivery wait between its claim and its send.
    defines: { ...protocol, RENEW_BEFORE_SEND: 0, FAULTS: F_HANG }
  },
  {
    name: "condition 3 removed (others released after the send) gives a duplicate",
    expect: "counterexample",
    violates: "duplicate",
    property: "safety",
    defines: { ...protocol, RELEASE_OTHERS_BEFORE_SEND: 0 }
  },
  {
    name: "presentation sent without its intent gives a second terminal turn",
    expect: "counterexample",
    violates: "secondTerminalTurn",
    property: "safety",
    defines: { ...protocol, PRESENT_PLAIN: 1, MAXF: 0 }
  },
  {
    name: "self-test: a lost message never given up is caught by the liveness check",
    expect: "counterexample",
    violates: "unresolved",
    property: "all_resolved",
    defines: { ...protocol, NATURALS: 0, LOST_RELEASE: 0 }
  },
  {
    name: "reminders: two processes, a crash, a lost message, an interruption",
    model: "reminders.pml",
    expect: "verified",
    property: "safety",
    defines: reminders
  },
  {
    name: "reminders: the sync-delivered skip removed is still safe (the pending check sees the held fallback)",
    model: "reminders.pml",
    expect: "verified",
    property: "safety",
    defines: { ...reminders, SYNC_SKIP: 0 }
  },
  {
    name: "reminders: send before take, one process and a crash, is safe (the crash takes the held send)",
    model: "reminders.pml",
    expect: "verified",
    property: "safety",
    defines: { ...reminders, NP: 1, SEND_BEFORE_TAKE: 1 }
  },
  {
    name: "reminders self-test: send before take (two processes) gives one ordinal twice",
    model: "reminders.pml",
    expect: "counterexample",
    violates: "reminderTwice",
    property: "safety",
    defines: { ...reminders, SEND_BEFORE_TAKE: 1 }
  },
  {
    name: "reminders self-test: branch scan only (no store take) gives one ordinal twice",
    model: "reminders.pml",
    expect: "counterexample",
    violates: "reminderTwice",
    property: "safety",
    // No fault needed: both handlers of one settle scan the branch before Pi writes either send.
    defines: { ...reminders, TAKE: 0, INTENTS: 0, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "reminders self-test: no pending check, no sync skip gives a fallback and a reminder on one settle",
    model: "reminders.pml",
    expect: "counterexample",
    violates: "reminderWithSuccessor",
    property: "safety",
    // (c) is off: the same send violates it too, and this variant must show (b).
    defines: { ...reminders, PENDING_CHECK: 0, SYNC_SKIP: 0, ASSERT_C: 0 }
  },
  {
    name: "reminders self-test: no pending check (sync skip kept) gives a reminder while the intent is pending",
    model: "reminders.pml",
    expect: "counterexample",
    violates: "reminderWhileSeenPending",
    property: "safety",
    defines: { ...reminders, PENDING_CHECK: 0 }
  },
  {
    name: "reminders limit: an intent made pending after the check gets its fallback beside the reminder",
    model: "reminders.pml",
    expect: "counterexample",
    violates: "reminderWhilePending",
    property: "safety",
    defines: { ...reminders, NP: 1, CRASHES: 0, LOSSES: 0, STRICT_PENDING: 1 }
  },
  {
    name: "waiting: the code, recover at a restart, a crash, a lost message",
    model: "waiting.pml",
    expect: "verified",
    property: "safety",
    defines: waiting
  },
  {
    name: "waiting: the code, two crashes, two lost messages",
    model: "waiting.pml",
    expect: "verified",
    property: "safety",
    defines: { ...waiting, CRASHES: 2, LOSSES: 2 }
  },
  {
    name: "waiting: the fallback pass without its claim check is still safe (one process)",
    model: "waiting.pml",
    expect: "verified",
    property: "safety",
    // unconfirmedOf and hasNaturalInFlight keep it off a presentation of its own process.
    defines: { ...waiting, FB_CHECK: 0, CRASHES: 2, LOSSES: 2 }
  },
  {
    name: "waiting self-test: the presentation sent plain (claims nothing) leaves the intent a second answer",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "answeredTwice",
    property: "safety",
    defines: { ...waiting, CLAIM: 0, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "waiting self-test: recover's resend without the once check gives the presentation twice",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "presentedTwice",
    property: "safety",
    defines: { ...waiting, ONCE: 0 }
  },
  {
    name: "waiting self-test: resolved at the send, not once the branch shows it",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "resolvedWithoutItsMessage",
    property: "safety",
    defines: { ...waiting, RESOLVE_AT_SEND: 1 }
  },
  {
    name: "waiting finding: recover on a maintenance pass while the first copy is on its way gives it twice",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "presentedTwice",
    property: "safety",
    defines: { ...waiting, PERIODIC: 1, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "waiting finding: no intent, recover while the presentation waits in Pi's follow-up queue gives it twice",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "presentedTwice",
    property: "safety",
    defines: { ...waiting, INTENT: 0, PERIODIC: 1, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "waiting: an answer before the presentation went out withholds it (one answer, no stale question)",
    model: "waiting.pml",
    expect: "verified",
    property: "safety",
    defines: { ...waiting, EARLY_ANSWER: 1 }
  },
  {
    name: "waiting self-test: without the check before the send, an early answer gives a stale presentation",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "answeredTwice",
    property: "safety",
    defines: { ...waiting, EARLY_ANSWER: 1, WITHHOLD: 0, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "waiting limit: the intent eligible while the run waits gives fallback + presentation",
    model: "waiting.pml",
    expect: "counterexample",
    violates: "answeredTwice",
    property: "safety",
    defines: { ...waiting, ELIG: 2, CRASHES: 0, LOSSES: 0 }
  },
  {
    name: "protocol: safety, both paths, every fault kind, a user turn",
    expect: "verified",
    property: "safety",
    full: true,
    defines: { ...protocol, USER_TURNS: 1 }
  },
  {
    name: "protocol: safety, both paths, two faults",
    expect: "verified",
    property: "safety",
    full: true,
    defines: { ...protocol, MAXF: 2 }
  },
  {
    name: "protocol: liveness, both paths, every fault kind",
    expect: "verified",
    property: "all_resolved",
    full: true,
    defines: protocol
  },
  {
    name: "rule 4 removed (natural send while a settle handler runs) gives a duplicate",
    expect: "counterexample",
    violates: "duplicate",
    property: "safety",
    full: true,
    defines: { ...protocol, NAT_OUTSIDE_HANDLER: 0, USER_TURNS: 1, FAULTS: F_HANG }
  },
  {
    name: "protocol: safety, both paths, every fault kind, lease 3 ticks, write delay 2",
    expect: "verified",
    property: "safety",
    full: true,
    defines: { ...protocol, LEASE: 3, WDELAY: 2 }
  }
]

const checks = allChecks.filter((check) => full || check.full !== true)
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length)
const selected = checks.filter((check) => only === undefined || check.name.includes(only))

/** Run a command to its end; its output, whatever its exit status. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString()
    })
    child.stderr.on("data", (chunk: Buffer) => {
      out += chunk.toString()
    })
    child.on("error", reject)
    child.on("close", () => resolve(out))
  })

interface Outcome {
  readonly ok: boolean
  readonly lines: ReadonlyArray<string>
}

const verify = async (check: Check, index: number): Promise<Outcome> => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-model-"))
  try {
    const model = check.model ?? "delivery.pml"
    for (const file of modelFiles[model]) copyFileSync(join(root, "model", file), join(dir, file))
    writeFileSync(
      join(dir, "constants.pml"),
      Object.entries(check.defines)
        .map(([key, value]) => `#define ${key} ${value}\n`)
        .join("")
    )
    const t0 = performance.now()
    await run("spin", ["-a", model], dir)
    const mode = check.property === "safety" ? ["-DSAFETY", "-DNOCLAIM"] : ["-DNFAIR=3"]
    // gcc -O0 compiles in a sixth of the -O2 time, which only a search of millions of states wins
    // back. COLLAPSE (exact state compression; a proof, unlike bitstate or hash compaction)
    // keeps the --full searches' memory down; the default ones fit in 400 MB without it.
    const large = check.full === true || check.large === true
    const build = [large ? "-O2" : "-O0", ...(check.full === true ? ["-DCOLLAPSE"] : [])]
    const compiled = await run("gcc", [...build, "-w", ...mode, "-DNOBOUNDCHECK", "-o", "pan", "pan.c"], dir)
    const hash = full ? "-w26" : "-w22"
    const panArgs =
      check.property === "safety"
        ? ["-E", "-m100000", hash]
        : ["-a", "-f", "-m100000", hash, "-N", check.property]
    const out = existsSync(join(dir, "pan")) ? await run("./pan", panArgs, dir) : compiled
    const errors = Number(/errors: (\d+)/.exec(out)?.[1] ?? Number.NaN)
    const states = /(\d+) states, stored/.exec(out)?.[1] ?? "?"
    const seconds = ((performance.now() - t0) / 1_000).toFixed(1)
    // A search cut short (depth limit, memory) proves nothing.
    const cut = /max search depth too small|out of memory/.test(out)
    const found = errors > 0 ? "counterexample" : errors === 0 && !cut ? "verified" : "no result"
    const kind = found === "counterexample" ? violated(out) : null
    const ok = found === check.expect && (check.violates === undefined || kind === check.violates)
    const detail = kind === null ? found : `${found} (${kind})`
    const lines = [`${ok ? "ok  " : "FAIL"} ${check.name}: ${detail}, ${states} states, ${seconds} s`]
    if (found === "counterexample" && (!ok || !quiet)) {
      const trail = await run("spin", ["-t", model], dir)
      const steps = trail
        .split("\n")
        .filter((line) => line.includes("MSC:"))
        .map((line) => `      ${line.trim().replace(/^MSC: /, "")}`)
      if (!ok || process.argv.includes("--trails")) lines.push(...steps)
      else lines.push(`      (${steps.length} steps; --trails prints them; ${index})`)
    }
    if (found === "no result") lines.push(out.slice(-2_000))
    return { ok, lines }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const started = performance.now()
console.log(
  `model constants from src/delivery/protocol.ts: lease ${DEFAULT_LEASE_MS} ms -> ${derived.lease} ticks, ` +
    `write-delay bound ${WRITE_DELAY_BOUND_MS} ms -> ${derived.writeDelay} tick; ` +
    `reminders per attempt ${MAX_REMINDERS} (src/domain/step-reminder.ts)`
)
// One search per core at a time, the longest first; results are printed in the checks' order.
const order = [...selected.keys()]
const results: Array<Promise<Outcome>> = []
const slots = Math.max(1, availableParallelism())
let next = 0
const worker = async (): Promise<void> => {
  while (next < order.length) {
    const index = order[next++] ?? 0
    const check = selected[index]
    if (check !== undefined) results[index] = verify(check, index)
    await results[index]
  }
}
await Promise.all(Array.from({ length: slots }, worker))
let failed = 0
for (const result of results) {
  const outcome = await result
  if (!outcome.ok) failed++
  console.log(outcome.lines.join("\n"))
}
console.log(
  `check:model ${failed === 0 ? "passed" : `FAILED (${failed})`} in ${((performance.now() - started) / 1_000).toFixed(1)} s`
)
process.exit(failed === 0 ? 0 : 1)
