/**
 * The first-open race, on either backend: `processes` real Node processes (open-worker.ts) wait
 * at a start barrier, then open one location at the same moment. Returns each process's exit
 * and its last report (opened, with the migrations it ran; or failed, typed).
 */
import { fileURLToPath } from "node:url"
import { Effect, Schema } from "effect"
import { collect, spawnNode } from "../support/node-child.ts"
import { startBarrier } from "./kit.ts"

const WORKER_SCRIPT = fileURLToPath(new URL("./open-worker.ts", import.meta.url))

const Report = Schema.parseJson(
  Schema.Union(
    Schema.Struct({ type: Schema.Literal("ready") }),
    Schema.Struct({ type: Schema.Literal("opened"), applied: Schema.Array(Schema.Number) }),
    Schema.Struct({ type: Schema.Literal("failed"), tag: Schema.String, message: Schema.String })
  )
)

export interface OpenOutcome {
  readonly code: number | null
  readonly stderr: string
  readonly last: typeof Report.Type | undefined
}

export const openAtOnce = (location: string, processes = 4) =>
  Effect.gen(function* () {
    const children = Array.from({ length: processes }, () => {
      const child = spawnNode(WORKER_SCRIPT, [location], process.cwd())
      return { child, result: collect(child) }
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const { child } of children) if (child.exitCode === null) child.kill("SIGKILL")
      })
    )
    yield* Effect.promise(() => startBarrier(children))
    for (const { child } of children) child.stdin.end("go\n")
    const results = yield* Effect.promise(() => Promise.all(children.map((c) => c.result)))
    return results.map((result): OpenOutcome => {
      const reports = result.stdout
        .trim()
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => Schema.decodeUnknownSync(Report)(line))
      return { code: result.code, stderr: result.stderr, last: reports[reports.length - 1] }
    })
  })

/** Every migration id the processes report having run, sorted. */
export const appliedBy = (outcomes: ReadonlyArray<OpenOutcome>): ReadonlyArray<number> =>
  outcomes.flatMap((o) => (o.last?.type === "opened" ? o.last.applied : [])).sort((a, b) => a - b)

/** "opened" for a clean open; otherwise everything the process said (report, exit code, stderr). */
export const opened = (outcome: OpenOutcome) =>
  outcome.last?.type === "opened" && outcome.code === 0 && outcome.stderr === "" ? "opened" : outcome
