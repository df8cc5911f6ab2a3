/**
 * Memory while the layer processes 3·10⁴ intents (ensure → list → claimEligibleForSession →
 * claimForRun → resolve), sampled after a forced GC every 2,500 intents. Statements are cached
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
import type { TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { type BenchSection, type Check, checkList, table } from "./section.ts"
import { LEASE_MS, openLayerStore, workload } from "./sql.ts"

const CHILD_FLAG = "--memory-child"
const BATCH = 2_500
const WARMUP = 1_000
const MiB = 1024 * 1024
/** Heap growth allowed over 10⁴ intents after warm-up: about 100 bytes per intent. */
const HEAP_BOUND = 1 * MiB
/** After 10⁴ intents the heap must be flat: the run continues to 3·10⁴ to show it. */
const FLAT_BOUND = 256 * 1024

interface Sample {
  readonly processed: number
  readonly heapUsed: number
  readonly rss: number
  readonly external: number
}

/** In the child: ensure → list → claimEligibleForSession → claimForRun → resolve per intent. */
const measureMemory = async (tempRoot: string, total: number): Promise<ReadonlyArray<Sample>> => {
  if (typeof globalThis.gc !== "function") setFlagsFromString("--expose-gc")
  const gc: unknown = typeof globalThis.gc === "function" ? globalThis.gc : runInNewContext("gc")
  if (typeof gc !== "function") throw new Error("cannot force a GC: start node with --expose-gc")
  const samples: Array<Sample> = []
  const snapshot = (processed: number) => {
    gc()
    gc()
    const m = process.memoryUsage()
    samples.push({ processed, heapUsed: m.heapUsed, rss: m.rss, external: m.external })
  }
  const cycle = (store: TurnIntentStoreService, index: number) =>
    Effect.gen(function* () {
      const w = workload("memory", index)
      const keys = { targetSessionId: w.input.targetSessionId, runId: w.input.runId }
      const token = `memory-token-${index}`
      yield* store.ensure(w.input)
      yield* store.list({ ...keys, state: "pending", limit: 10 })
      yield* store.claimEligibleForSession({
        targetSessionId: keys.targetSessionId,
        token,
        leaseMs: LEASE_MS,
        limit: 10
      })
      yield* store.claimForRun({ ...keys, token, leaseMs: LEASE_MS })
      yield* store.resolve({
        intentId: w.raw.intentId,
        token,
        resolution: "workflowPrompt",
        messageId: `m-${index}`
      })
    })
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* openLayerStore(join(tempRoot, "memory.db"))
        let index = 0
        for (let i = 0; i < WARMUP; i++) yield* cycle(store, index++)
        snapshot(0)
        for (let processed = BATCH; processed <= total; processed += BATCH) {
          for (let i = 0; i < BATCH; i++) yield* cycle(store, index++)
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
    (key) => key in value && typeof Reflect.get(value, key) === "number"
  )

export const memorySection: BenchSection = {
  id: "memory",
  title: "Memory: 10⁴ processed intents and beyond",
  run: async (context) => {
    const total = context.quick ? 5_000 : 30_000
    const goalAt = context.quick ? BATCH : 10_000
    // A fresh process, so that the other sections' garbage and page caches do not blur the numbers.
    const flags = ["--experimental-transform-types", "--disable-warning=ExperimentalWarning", "--expose-gc"]
    const args = [...flags, fileURLToPath(import.meta.url), CHILD_FLAG, context.tempRoot, String(total)]
    const { stdout } = await promisify(execFile)(process.execPath, args)
    const samples: unknown = JSON.parse(stdout)
    if (!Array.isArray(samples) || !samples.every(isSample)) throw new Error(`memory child printed ${stdout}`)
    const heapAt = (processed: number) =>
      samples.find((s) => s.processed === processed)?.heapUsed ?? Number.NaN
    const growth = heapAt(goalAt) - heapAt(0)
    const later = heapAt(total) - heapAt(goalAt)
    const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`
    const goals: ReadonlyArray<Check> = [
      {
        name: `heap growth over the first ${goalAt.toLocaleString("en")} intents ≤ ${HEAP_BOUND / MiB} MiB`,
        ok: growth <= HEAP_BOUND,
        detail: `${kib(growth)} (${(growth / goalAt).toFixed(1)} B per intent)`
      },
      {
        name: `heap flat from ${goalAt.toLocaleString("en")} to ${total.toLocaleString("en")} intents (≤ ${kib(FLAT_BOUND)})`,
        ok: later <= FLAT_BOUND,
        detail: kib(later)
      }
    ]
    const mib = (bytes: number) => (bytes / MiB).toFixed(2)
    const markdown = [
      `A fresh Node process walks ${total.toLocaleString("en")} intents through the layer: ensure → list → ` +
        `claimEligibleForSession → claimForRun → resolve, after ${WARMUP.toLocaleString("en")} warm-up intents; ` +
        `\`process.memoryUsage()\` after a forced GC every ${BATCH.toLocaleString("en")} intents. RSS also holds ` +
        "SQLite's page cache (bounded by `cache_size`) and the allocator's arenas, which settle after the first " +
        "10⁴–2·10⁴ intents.",
      "",
      table(
        ["intents processed", "heap used MiB", "external MiB", "RSS MiB"],
        samples.map((s) => [s.processed.toLocaleString("en"), mib(s.heapUsed), mib(s.external), mib(s.rss)])
      ),
      "",
      checkList(goals)
    ].join("\n")
    return { markdown, checks: [], goals }
  }
}

if (process.argv[2] === CHILD_FLAG) {
  const samples = await measureMemory(process.argv[3] ?? ".", Number(process.argv[4] ?? 10_000))
  process.stdout.write(JSON.stringify(samples))
}
