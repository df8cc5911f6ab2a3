/**
 * Parallel long runs: `--jobs N` splits a seed range over N worker processes of the same script
 * (worker k takes every N-th seed from the k-th), each printing one `RESULT <json>` line per
 * seed; the parent collects them as they arrive. A seed's result never depends on which worker
 * ran it, so a parallel run reports what a serial one would (replay lines stay the same).
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const PREFIX = "RESULT "

export interface SeedRange {
  readonly from: number
  readonly runs: number
}

/** The seeds of a range in order; in a worker only its share. */
export const seedsOf = (range: SeedRange, worker: { readonly index: number; readonly jobs: number } | null) =>
  Array.from({ length: range.runs }, (_, i) => range.from + i).filter(
    (_, i) => worker === null || i % worker.jobs === worker.index
  )

/** In a worker: send one seed's result to the parent. */
export const emitResult = (result: unknown): void => {
  process.stdout.write(`${PREFIX}${JSON.stringify(result)}\n`)
}

/**
 * In the parent: run `jobs` workers of `scriptUrl` with `args` plus `--worker K --jobs N`, and
 * hand every result to `onResult`. Other worker output goes to stderr; a worker that exits
 * non-zero is reported but does not stop the others (its missing seeds show in the count).
 */
export const runWorkers = async (
  scriptUrl: string,
  args: ReadonlyArray<string>,
  jobs: number,
  onResult: (result: unknown) => void
): Promise<{ readonly failedWorkers: number }> => {
  const script = fileURLToPath(scriptUrl)
  let failedWorkers = 0
  await Promise.all(
    Array.from({ length: jobs }, (_, index) => {
      const child = spawn(
        process.execPath,
        [...process.execArgv, script, ...args, "--worker", String(index), "--jobs", String(jobs)],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
      const lines = createInterface({ input: child.stdout })
      lines.on("line", (line) => {
        if (line.startsWith(PREFIX)) onResult(JSON.parse(line.slice(PREFIX.length)))
        else if (line.length > 0) process.stderr.write(`[worker ${index}] ${line}\n`)
      })
      return new Promise<void>((done) => {
        child.on("close", (code) => {
          if (code !== 0) {
            failedWorkers++
            process.stderr.write(`worker ${index} exited with code ${code}\n`)
          }
          done()
        })
      })
    })
  )
  return { failedWorkers }
}

/** p50/p95/max of a list of milliseconds, rounded; zeros for an empty list. */
export const percentiles = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (p: number) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0)
  return { p50: at(0.5), p95: at(0.95), max: at(1) }
}
