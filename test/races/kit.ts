/**
 * The pieces every cross-process race shares: in the worker, JSON-line reports, the "go" wait
 * and seeded picks; in the test, the start barrier (every worker has opened the database before
 * any of them competes).
 */
import { Effect, Random } from "effect"
import type { NodeChild } from "../support/node-child.ts"

/** One report per stdout line; the test decodes it with its protocol's schema. */
export const reportLine = <A>(line: A) => Effect.sync(() => process.stdout.write(`${JSON.stringify(line)}\n`))

/** Resolves at the first stdin data: the parent's "go" once every worker is ready. */
export const waitForGo = Effect.async<void>((resume) => {
  process.stdin.once("data", () => {
    process.stdin.pause()
    resume(Effect.void)
  })
})

export const pick = <A>(items: ReadonlyArray<A>) =>
  Effect.map(Random.nextIntBetween(0, items.length), (index) => {
    const item = items[index]
    if (item === undefined) throw new Error("pick from an empty list")
    return item
  })

/** Resolves once every worker has reported `"type":"ready"`; rejects if one exits first. */
export const startBarrier = (children: ReadonlyArray<{ readonly child: NodeChild }>) =>
  Promise.all(
    children.map(
      ({ child }) =>
        new Promise<void>((resolve, reject) => {
          let seen = ""
          const onData = (chunk: Buffer) => {
            seen += chunk.toString("utf8")
            if (seen.includes('"type":"ready"')) {
              child.stdout.off("data", onData)
              resolve()
            }
          }
          child.stdout.on("data", onData)
          child.once("exit", (code) => reject(new Error(`worker exited early with ${code}`)))
        })
    )
  )
