/**
 * Memory while the layer processes 10⁴ intents (ensure → list → claimForRun → resolve, plus a
 * sync pass for the session), sampled after a forced GC every 10³ intents. Statements are cached
 * by SQL text and the text set is fixed, so the heap must level off after warm-up. Runs in a
 * child process so that the other sections' garbage and page caches do not blur the numbers.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Effect } from "effect"
import { LEASE_MS, openLayerStore, workload } from "./fixtures.ts"
import { type BenchSection, type Check, mark } from "./section.ts"
import { table } from "./stats.ts"

const CHILD_FLAG = "--memory-child"
const run = promisify(execFile)
const BATCH = 1_000
const WARMUP = 1_000
const MiB = 1024 * 1024
/** Heap growth allowed over 10⁴ intents after warm-up: well under 100 bytes per intent. */
const HEAP_BOUND = 1 * MiB

const collector = (): (() => void) => {
  if (typeof globalThis.gc === "function") return globalThis.gc
  setFlagsFromString("--expose-gc")
  const gc: unknown = runInNewContext("gc")
  if (typeof gc !== "function") throw new Error("cannot force a GC: start node with --expose-gc")
  return () => gc()
}

interface Sample {
  readonly processed: number
  readonly heapUsed: number
  readonly rss: number
  readonly external: number
}

const measure = async (tempRoot: string, total: number): Promise<ReadonlyArray<Sample>> => {
  const gc = collector()
  const samples: Array<Sample> = []
  const snapshot = (processed: number) => {
    gc()
    gc()
    const m = process.memoryUsage()
    samples.push({ processed, heapUsed: m.heapUsed, rss: m.rss, external: m.external })
  }
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* openLayerStore(join(tempRoot, "memory.db"))
        const cycle = (index: number) =>
          Effect.gen(function* () {
            const w = workload("memory", index)
            const token = `memory-token-${index}`
            yield* store.ensure(w.input)
            yield* store.list({
              targetSessionId: w.input.targetSessionId,
              runId: w.input.runId,
              state: "pending",
              limit: 10
            })
            yield* store.claimEligibleForSession({
              targetSessionId: w.input.targetSessionId,
              token,
              leaseMs: LEASE_MS,
              limit: 10
            })
            yield* store.claimForRun({
              runId: w.input.runId,
              targetSessionId: w.input.targetSessionId,
              token,
              leaseMs: LEASE_MS
            })
            yield* store.resolve({
              intentId: w.raw.intentId,
              token,
              resolution: "workflowPrompt",
              messageId: `m-${index}`
            })
          })
        let index = 0
        for (let i = 0; i < WARMUP; i++) yield* cycle(index++)
        snapshot(0)
        for (let processed = BATCH; processed <= total; processed += BATCH) {
          for (let i = 0; i < BATCH; i++) yield* cycle(index++)
          snapshot(processed)
        }
      })
    )
  )
  return samples
}

const isSample = (value: unknown): value is Sample =>
  typeof value === "object" &&
  value !== null &&
  ["processed", "heapUsed", "rss", "external"].every(
    (key) => typeof (value as Record<string, unknown>)[key] === "number"
  )

const inChild = async (tempRoot: string, total: number): Promise<ReadonlyArray<Sample>> => {
  const { stdout } = await run(process.execPath, [
    "--experimental-strip-types",
    "--expose-gc",
    fileURLToPath(import.meta.url),
    CHILD_FLAG,
    tempRoot,
    String(total)
  ])
  const parsed: unknown = JSON.parse(stdout)
  if (!Array.isArray(parsed) || !parsed.every(isSample)) throw new Error(`memory child printed ${stdout}`)
  return parsed
}

export const memorySection: BenchSection = {
  id: "memory",
  title: "Memory over 10⁴ processed intents",
  run: async (context) => {
    const total = context.quick ? 3_000 : 10_000
    const samples = await inChild(context.tempRoot, total)
    const base = samples[0]
    const end = samples[samples.length - 1]
    const growth = base !== undefined && end !== undefined ? end.heapUsed - base.heapUsed : Number.NaN
    const ok = growth <= HEAP_BOUND
    const goals: ReadonlyArray<Check> = [
      {
        name: `heap growth over ${total.toLocaleString("en")} intents ≤ ${HEAP_BOUND / MiB} MiB`,
        ok,
        detail: `${(growth / 1024).toFixed(0)} KiB (${(growth / total).toFixed(1)} B per intent)`
      }
    ]
    const mib = (bytes: number) => (bytes / MiB).toFixed(2)
    const markdown = [
      `A fresh Node process walks ${total.toLocaleString("en")} intents through the layer: ensure → list → ` +
        `claimEligibleForSession → claimForRun → resolve, after ${WARMUP.toLocaleString("en")} warm-up intents; ` +
        "`process.memoryUsage()` after a forced GC every 1,000 intents. RSS includes SQLite's page cache " +
        "(bounded by `cache_size`) and the file's memory map.",
      "",
      table(
        ["intents processed", "heap used MiB", "external MiB", "RSS MiB"],
        samples.map((s) => [s.processed.toLocaleString("en"), mib(s.heapUsed), mib(s.external), mib(s.rss)])
      ),
      "",
      goals.map((g) => `- ${mark(g.ok)} ${g.name}: ${g.detail}`).join("\n")
    ].join("\n")
    return { markdown, checks: [], goals }
  }
}

if (process.argv[2] === CHILD_FLAG) {
  const samples = await measure(process.argv[3] ?? ".", Number(process.argv[4] ?? 10_000))
  process.stdout.write(JSON.stringify(samples))
}
