/**
 * The test side of a cross-process race: spawn the workers, release them together once each has
 * opened the database (the start barrier), and read back their reports, one JSON line each. A
 * worker that writes to stderr, exits non-zero or prints a line its protocol does not know fails
 * the test; one still running when the scope closes is killed.
 */
import { expect } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { collect, spawnNode } from "../support/node-child.ts"
import { startBarrier } from "./kit.ts"

/** Each line of a worker's stdout as its protocol's report. */
export const reportLines = <R>(
  worker: string,
  stdout: string,
  decode: (line: string) => R
): ReadonlyArray<R> =>
  stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        return decode(line)
      } catch {
        throw new Error(`worker ${worker} printed an unexpected line: ${line}`)
      }
    })

/** Run one worker of `script` per config to its end; every report, and the time from "go" to the last exit. */
export const raceWorkers = <C extends { readonly worker: string }, R>(
  script: string,
  configs: ReadonlyArray<C>,
  decode: (line: string) => R
): Effect.Effect<{ readonly reports: ReadonlyArray<R>; readonly elapsedMs: number }, never, Scope.Scope> =>
  Effect.gen(function* () {
    const children = configs.map((config) => {
      const child = spawnNode(script, [JSON.stringify(config)], process.cwd())
      return { worker: config.worker, child, result: collect(child) }
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const { child } of children) if (child.exitCode === null) child.kill("SIGKILL")
      })
    )
    yield* Effect.promise(() => startBarrier(children))
    const started = performance.now()
    for (const { child } of children) child.stdin.end("go\n")
    const results = yield* Effect.promise(() => Promise.all(children.map((c) => c.result)))
    const elapsedMs = performance.now() - started
    const reports = children.flatMap(({ worker }, i) => {
      const result = results[i]
      expect(result?.stderr, `stderr of ${worker}`).toBe("")
      expect(result?.code, `exit code of ${worker}`).toBe(0)
      return reportLines(worker, result?.stdout ?? "", decode)
    })
    return { reports, elapsedMs }
  })
