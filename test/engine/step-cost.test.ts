/**
 * What keeps a step cheap and the process responsive at any length of a run: the runner yields
 * to the event loop between steps (a macrotask on the live clock), the step boundary reads only
 * the claim and its control requests, and a run's snapshot is parsed once per distinct text.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option } from "effect"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { sampleRun } from "../support/fixtures.ts"
import { makeHarness } from "./support/harness.ts"

const openStore = (filename: string) =>
  Effect.map(Layer.build(RunStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(filename)))), (context) =>
    Context.get(context, RunStore)
  )

/** s1 → s2 → … → sN, each a synchronous compute node that notes its visit in `log`. */
const chain = (steps: number, log: Array<string>) => {
  const nodes: Record<string, unknown> = {}
  const edges: Array<unknown> = []
  for (let i = 1; i <= steps; i++) {
    nodes[`s${i}`] = {
      type: "compute",
      run: () => {
        log.push(`s${i}`)
        return { i }
      }
    }
    if (i < steps) edges.push({ from: `s${i}`, to: `s${i + 1}` })
  }
  return { name: "chain", startAt: "s1", maxSteps: steps, nodes, edges }
}

describe("a step's cost and the event loop", () => {
  it.scopedLive("a chain of synchronous compute nodes lets a macrotask run between its steps", () =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const h = yield* makeHarness({ definitions: [chain(20, log)] })
      const runId = yield* h.launch("chain")
      // Queued while the run starts: it runs at the first step boundary, not after the run.
      setImmediate(() => log.push("macrotask"))
      for (let i = 0; i < 500; i++) {
        const run = yield* h.store.get(runId)
        if (Option.isSome(run) && run.value.state === "completed") break
        yield* Effect.sleep("5 millis")
      }
      expect(log.filter((entry) => entry.startsWith("s"))).toHaveLength(20)
      expect(log.indexOf("macrotask")).toBeGreaterThan(-1)
      expect(log.indexOf("macrotask")).toBeLessThan(log.indexOf("s20"))
    })
  )

  it.scoped("the boundary read: the claim's control requests, ClaimLost for any other token", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(sampleRun("r1", { targetSessionId: "s1" }))
      yield* store.claim({ runId: "r1", token: "t", leaseMs: 60_000, mode: "activate" })
      const fence = { runId: "r1", token: "t" }
      expect(yield* store.control(fence)).toEqual({ pauseRequested: false, cancelRequested: null })
      yield* store.requestPause("r1")
      expect(yield* store.control(fence)).toEqual({ pauseRequested: true, cancelRequested: null })
      yield* store.cancel("r1", "agent")
      expect(yield* store.control(fence)).toEqual({ pauseRequested: true, cancelRequested: "agent" })
      const stranger = yield* Effect.either(store.control({ runId: "r1", token: "other" }))
      expect(Either.isLeft(stranger) && stranger.left._tag).toBe("ClaimLost")
      const missing = yield* Effect.either(store.control({ runId: "nope", token: "t" }))
      expect(Either.isLeft(missing) && missing.left._tag).toBe("ClaimLost")
    })
  )

  it.scoped("reads of one run share its parsed snapshot; another snapshot is parsed anew", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(sampleRun("r1", { targetSessionId: "s1", snapshot: { name: "a" } }))
      yield* store.reserve(sampleRun("r2", { targetSessionId: "s2", snapshot: { name: "b" } }))
      const first = Option.getOrThrow(yield* store.get("r1"))
      const again = Option.getOrThrow(yield* store.get("r1"))
      expect(again.snapshot).toBe(first.snapshot)
      const other = Option.getOrThrow(yield* store.get("r2"))
      expect(other.snapshot).toEqual({ name: "b" })
      expect(Option.getOrThrow(yield* store.get("r1")).snapshot).toEqual({ name: "a" })
    })
  )
})
