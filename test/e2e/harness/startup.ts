/**
 * Pi start-up time: from spawning the CLI to its first `get_state` answer (RPC mode, isolated
 * sandbox, mock model), the number that an extension's import cost adds to.
 */
import { startMockOpenAI } from "./mock-openai.ts"
import { createPiSandbox, PiRpc } from "./pi-rpc.ts"

export interface StartupMeasurement {
  readonly extensionPath: string | null
  /** Each measured run in ms, in run order (warm-up runs excluded). */
  readonly samplesMs: ReadonlyArray<number>
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  const upper = sorted[mid] ?? Number.NaN
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? Number.NaN) + upper) / 2
}

/**
 * Start Pi `runs` times (after `warmup` unmeasured starts that fill the OS file cache and Node's
 * compile cache) with the extension at `extensionPath` (absolute) or none, each in a fresh
 * sandbox, and stop it again. Runs are sequential so they do not compete for CPU.
 */
export const measureStartup = async (
  extensionPath: string | null,
  runs: number,
  options: { readonly warmup?: number; readonly env?: Readonly<Record<string, string>> } = {}
): Promise<StartupMeasurement> => {
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`measureStartup: runs must be >= 1, got ${runs}`)
  const mock = await startMockOpenAI()
  const samples: Array<number> = []
  try {
    const warmup = options.warmup ?? 1
    for (let i = 0; i < warmup + runs; i++) {
      const sandbox = createPiSandbox(mock.baseUrl, "pwt-startup-")
      const started = performance.now()
      const pi = new PiRpc({
        sandbox,
        extensionPath,
        ...(options.env === undefined ? {} : { env: options.env })
      })
      try {
        await pi.start(30_000)
        if (i >= warmup) samples.push(performance.now() - started)
        await pi.stop()
      } finally {
        await pi.dispose()
        sandbox.remove()
      }
    }
  } finally {
    await mock.close()
  }
  return {
    extensionPath,
    samplesMs: samples,
    medianMs: median(samples),
    minMs: Math.min(...samples),
    maxMs: Math.max(...samples)
  }
}
