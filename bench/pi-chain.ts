/**
 * A long chain of synchronous compute nodes in real Pi: does Pi stay responsive, and does a step
 * cost the same at any length? One Pi process (RPC mode, dist/extension.js, mock model) runs
 * chains of 10, 100, 1,000 and 2,000 compute nodes, each started with `/workflow start`. While a
 * chain runs, the bench sends `get_state` again and again (each after the previous answer) and
 * times every answer: a held event loop shows as one long answer. The per-step cost comes from the
 * stored step rows (first start to last end, over the number of steps).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { startMockOpenAI } from "../test/e2e/harness/mock-openai.ts"
import { isCustomMessageEnd } from "../test/e2e/harness/rpc-records.ts"
import { type PiRpc, startPi } from "../test/e2e/harness/pi-rpc.ts"
import { createPiSandbox } from "../test/e2e/harness/pi-sandbox.ts"
import { peekRows } from "../test/e2e/harness/sqlite-peek.ts"
import { builtExtension } from "./pi-support.ts"
import { type BenchSection, type Check, mark } from "./section.ts"
import { percentileSorted, table } from "./stats.ts"

const PRESENTATION = "pi-workflows-presentation"

/** Goals of issue 25: Pi answers within this at any moment of a run; a step costs at most this. */
const ANSWER_GOAL_MS = 50
const STEP_GOAL_MS = 1
/** "Flat": the per-step cost at 2,000 steps within this factor of the cost at 10. */
const FLAT_GOAL = 2

/**
 * Measured with this section on the commit before the fix (083aa51), same machine: the engine
 * ran the whole chain without yielding to the event loop, so `get_state` waited for its end.
 */
const BEFORE: ReadonlyArray<ChainRow> = [
  { steps: 10, startAnswerMs: 174, probes: 2, maxAnswerMs: 178, p99AnswerMs: 178, perStepMs: 12.9 },
  { steps: 100, startAnswerMs: 803, probes: 1, maxAnswerMs: 793, p99AnswerMs: 793, perStepMs: 7.14 },
  {
    steps: 1_000,
    startAnswerMs: 14_458,
    probes: 2,
    maxAnswerMs: 14_442,
    p99AnswerMs: 14_442,
    perStepMs: 14.37
  },
  {
    steps: 2_000,
    startAnswerMs: 49_665,
    probes: 1,
    maxAnswerMs: 49_712,
    p99AnswerMs: 49_712,
    perStepMs: 24.75
  }
]

/** A chain of `steps` compute nodes s1 → s2 → … ; each returns a small object. */
export const chainWorkflow = (name: string, steps: number): string => `const nodes = {}
const edges = []
for (let i = 1; i <= ${steps}; i++) {
  nodes["s" + i] = { type: "compute", run: () => ({ i }) }
  if (i < ${steps}) edges.push({ from: "s" + i, to: "s" + (i + 1) })
}
export default { name: ${JSON.stringify(name)}, startAt: "s1", maxSteps: ${steps}, nodes, edges }
`

export interface ChainRow {
  readonly steps: number
  /** `/workflow start` → its RPC response, ms. */
  readonly startAnswerMs: number
  /** `get_state` answers sent while the run was going. */
  readonly probes: number
  readonly maxAnswerMs: number
  readonly p99AnswerMs: number
  /** First step started → last step ended, over the steps, ms. */
  readonly perStepMs: number
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

const isPresentationEnd = (record: Readonly<Record<string, unknown>>): boolean =>
  isCustomMessageEnd(record, PRESENTATION)

const timeOf = (value: unknown): number => (typeof value === "string" ? Date.parse(value) : Number.NaN)

/** Run one chain: start it, probe Pi until the presentation is appended, read its step rows. */
const runChain = async (pi: PiRpc, dbPath: string, name: string, steps: number): Promise<ChainRow> => {
  const cursor = pi.mark()
  const samples: Array<number> = []
  let ended = false
  const end = pi
    .waitFor(isPresentationEnd, { after: cursor, timeoutMs: 120_000, label: `the ${name} presentation` })
    .then(() => {
      ended = true
    })
  const asked = performance.now()
  const started = pi
    .send({ type: "prompt", message: `/workflow start ${name}` }, 120_000)
    .then(() => performance.now() - asked)
  // Probe from the moment the command is sent: the answer to the start itself is a probe too.
  while (!ended) {
    // A probe counts when it was sent while the run was going, whenever it was answered.
    const sent = performance.now()
    await pi.sendOk({ type: "get_state" }, 120_000)
    samples.push(performance.now() - sent)
    await sleep(5)
  }
  await end
  const startAnswerMs = await started
  await pi.waitForQuiet({ after: cursor, timeoutMs: 30_000, quietMs: 100 })
  const run = peekRows(dbPath, "workflow_runs", { where: "workflow_name = ?", params: [name] })[0]
  const rows = peekRows(dbPath, "workflow_steps", { where: "run_id = ?", params: [String(run?.run_id)] })
  if (run?.state !== "completed" || rows.length !== steps)
    throw new Error(`pi-chain ${name}: run ${String(run?.state)} with ${rows.length} of ${steps} steps`)
  const first = Math.min(...rows.map((r) => timeOf(r.started_at)))
  const last = Math.max(...rows.map((r) => timeOf(r.ended_at)))
  const sorted = Float64Array.from(samples).sort()
  return {
    steps,
    startAnswerMs,
    probes: samples.length,
    maxAnswerMs: sorted.at(-1) ?? Number.NaN,
    p99AnswerMs: percentileSorted(sorted, 99),
    perStepMs: (last - first) / steps
  }
}

const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(value >= 100 ? 0 : 2) : "—")

const rowsTable = (rows: ReadonlyArray<ChainRow>) =>
  table(
    ["steps", "`/workflow start` answered", "`get_state` probes", "max answer", "p99 answer", "per step"],
    rows.map((r) => [
      String(r.steps),
      ms(r.startAnswerMs),
      String(r.probes),
      ms(r.maxAnswerMs),
      ms(r.p99AnswerMs),
      ms(r.perStepMs)
    ])
  )

const flatness = (rows: ReadonlyArray<ChainRow>) => {
  const shortest = rows[0]
  const longest = rows.at(-1)
  return shortest === undefined || longest === undefined ? Number.NaN : longest.perStepMs / shortest.perStepMs
}

export const piChainSection: BenchSection = {
  id: "pi-chain",
  title: "A long synchronous chain in real Pi: RPC answers during the run, per-step cost",
  run: async (context) => {
    const lengths = context.quick ? [10, 100] : [10, 100, 1_000, 2_000]
    const extension = builtExtension(context.log)
    const mock = await startMockOpenAI({ script: Array.from({ length: 20 }, () => ({ text: "Noted." })) })
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-bench-chain-")
    const rows: Array<ChainRow> = []
    try {
      const dir = join(sandbox.workDir, ".pi", "workflows")
      mkdirSync(dir, { recursive: true })
      for (const steps of lengths)
        writeFileSync(join(dir, `chain-${steps}.workflow.mjs`), chainWorkflow(`chain-${steps}`, steps))
      writeFileSync(join(dir, "warm-up.workflow.mjs"), chainWorkflow("warm-up", 10))
      const dbPath = join(sandbox.root, "controller.db")
      const pi = await startPi({
        sandbox,
        extensionPath: extension,
        env: { PI_WORKFLOWS_DB: dbPath },
        timeoutMs: 20_000
      })
      try {
        // A process's first run loads cold code paths: a warm-up chain, not one of the measured ones.
        await runChain(pi, dbPath, "warm-up", 10)
        for (const steps of lengths) {
          context.log(`  chain of ${steps}`)
          rows.push(await runChain(pi, dbPath, `chain-${steps}`, steps))
        }
        await pi.stop()
      } finally {
        await pi.dispose()
      }
    } finally {
      await mock.close()
      sandbox.remove()
    }
    const worstAnswer = Math.max(...rows.map((r) => Math.max(r.maxAnswerMs, r.startAnswerMs)))
    const worstStep = Math.max(...rows.map((r) => r.perStepMs))
    const flat = flatness(rows)
    const goals: ReadonlyArray<Check> = [
      {
        name: `pi-chain: Pi answers within ${ANSWER_GOAL_MS} ms during a chain`,
        ok: worstAnswer <= ANSWER_GOAL_MS,
        detail: `slowest answer (get_state or /workflow start) ${ms(worstAnswer)} ms`
      },
      {
        name: `pi-chain: per-step cost ≤ ${STEP_GOAL_MS} ms`,
        ok: worstStep <= STEP_GOAL_MS,
        detail: `worst ${ms(worstStep)} ms per step`
      },
      {
        name: `pi-chain: per-step cost flat (${lengths.at(-1)} vs ${lengths[0]} steps ≤ ${FLAT_GOAL}×)`,
        ok: flat <= FLAT_GOAL,
        detail: `${flat.toFixed(2)}×`
      }
    ]
    const markdown = [
      "Chains of synchronous compute nodes (`s1 → s2 → …`, each returns `{i}`) started with `/workflow start` " +
        "in one Pi process (RPC mode, dist/extension.js, mock model). While each runs, `get_state` is sent again " +
        "and again (5 ms after each answer) until the run's presentation is appended; ms. Per step: first step " +
        "started → last step ended (stored timestamps, ms resolution) over the steps.",
      "",
      rowsTable(rows),
      "",
      `Per step at ${lengths.at(-1)} vs ${lengths[0]} steps: ${flat.toFixed(2)}×.`,
      ...(BEFORE.length === 0
        ? []
        : [
            "",
            "Before the fix (commit 083aa51, this section, same machine): the engine ran a chain without " +
              "reaching the event loop, so a `get_state` sent during it was answered at its end.",
            "",
            rowsTable(BEFORE),
            "",
            `Per step at ${BEFORE.at(-1)?.steps} vs ${BEFORE[0]?.steps} steps: ${flatness(BEFORE).toFixed(2)}×.`
          ]),
      "",
      ...goals.map((g) => `- ${mark(g.ok)} ${g.name}: ${g.detail}`)
    ].join("\n")
    return { markdown, checks: [], goals }
  }
}
