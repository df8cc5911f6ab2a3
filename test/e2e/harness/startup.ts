/**
 * Pi start-up time: from spawning the CLI to its first `get_state` answer (RPC mode, isolated
 * sandbox, mock model), the number that an extension's import cost adds to.
 */
import { existsSync, readFileSync } from "node:fs"
import { startMockOpenAI } from "./mock-openai.ts"
import { PiRpc } from "./pi-rpc.ts"
import { createPiSandbox } from "./pi-sandbox.ts"

export interface StartupMeasurement {
  readonly extensionPath: string | null
  /** Each measured run in ms, in run order (warm-up runs excluded). */
  readonly samplesMs: ReadonlyArray<number>
  /**
   * CPU time (user + system) the Pi process had used when it answered, per run, where the OS
   * reports it (Linux `/proc`; empty elsewhere). Unlike the wall time it hardly moves with the
   * machine's load, so it tells variants apart on a busy machine.
   */
  readonly cpuMs: ReadonlyArray<number>
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
}

/** Clock ticks per second of /proc/<pid>/stat on Linux (USER_HZ; 100 on every mainstream kernel). */
const USER_HZ = 100

/** utime + stime of a live process in ms, or undefined where /proc is not available. */
const processCpuMs = (pid: number | undefined): number | undefined => {
  const file = `/proc/${pid}/stat`
  if (pid === undefined || !existsSync(file)) return undefined
  // Fields after the parenthesised command name: state is the 3rd field, utime the 14th, stime the 15th.
  const stat = readFileSync(file, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const ticks = Number(fields[11]) + Number(fields[12])
  return Number.isFinite(ticks) ? (ticks * 1000) / USER_HZ : undefined
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
  const cpu: Array<number> = []
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
        const cpuMs = processCpuMs(pi.pid)
        if (i >= warmup) {
          samples.push(performance.now() - started)
          if (cpuMs !== undefined) cpu.push(cpuMs)
        }
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
    cpuMs: cpu,
    medianMs: median(samples),
    minMs: Math.min(...samples),
    maxMs: Math.max(...samples)
  }
}
