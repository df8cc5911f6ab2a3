/**
 * The `serve` timeline on a database the real stores wrote: the bounded, paged reads
 * (store/timeline-reads.ts) and the model built from them (serve/timeline.ts) — step order,
 * outcomes, limits and deadlines (a takeover continues its visit's deadline), reminders, waits,
 * intent lives, events, the restart chain, the runs filter, page bounds, and no secret in any
 * of it. Runs on either backend (PWT_STORE_BACKEND).
 */
import { Effect, Layer, Option } from "effect"
import { describe, expect, it } from "vitest"
import { LaunchStore } from "../../src/store/launch-store.ts"
import * as LaunchStoreSql from "../../src/store/launch-store-sql.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import * as StepReminderStoreSql from "../../src/store/step-reminder-store-sql.ts"
import { MAX_PAGE, TEXT_READ, TimelineReads } from "../../src/store/timeline-reads.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import {
  chainLinks,
  eventItems,
  intentItems,
  MAX_TEXT,
  runView,
  stepItems
} from "../../src/serve/timeline.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { sampleRun } from "../support/fixtures.ts"
import { SECRET, seedTimeline } from "./seed-timeline.ts"

const storesAt = (location: string) =>
  Layer.mergeAll(
    TurnIntentStoreSql.layer,
    RunStoreSql.layer,
    LaunchStoreSql.layer,
    StepReminderStoreSql.layer
  ).pipe(Layer.provideMerge(databaseLayerAt(location)))

type Stores = Layer.Layer.Success<ReturnType<typeof storesAt>>

/** Seed, then run `program` over the stores and the reads. */
const seeded = <A, E>(program: Effect.Effect<A, E, Stores>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const location = yield* freshLocation
        return yield* Effect.provide(Effect.zipRight(seedTimeline, program), storesAt(location))
      })
    )
  )

/** Every step of a run, page by page. */
const allSteps = (runId: string, limit: number) =>
  Effect.gen(function* () {
    const reads = yield* TimelineReads
    const pages = []
    let cursor = 0
    for (;;) {
      const page = stepItems(yield* reads.steps(runId, cursor, limit))
      pages.push(page)
      if (page.next === null) return pages
      cursor = Number(page.next)
    }
  })

const noSecret = (value: unknown) => {
  const text = JSON.stringify(value)
  expect(text).not.toContain(SECRET)
  expect(text).not.toContain("A1b2C3d4E5")
}

describe("the serve timeline (reads and model)", () => {
  it("step visits in order with their outcomes, limits, deadlines, reminders and notes; no secret", async () => {
    const [page] = await seeded(allSteps("run-deploy", 50))
    const items = page?.items ?? []
    expect(items.map((s) => `${s.seq}:${s.node}:${s.outcome}`)).toEqual([
      "1:build:ok",
      "2:test:superseded",
      "3:test:failed"
    ])
    const [build, taken, failed] = items
    expect(build?.limit).toBe(10 * 60_000)
    expect(build?.deadline).toBe((build?.start ?? 0) + 10 * 60_000)
    // The takeover continued the visit: its deadline counts from the first attempt's start.
    expect(failed?.deadline).toBe((taken?.start ?? 0) + 30 * 60_000)
    expect(taken?.note).toBe("superseded: the run was taken over")
    // Who ran each visit: the takeover shows as the runner's change, on the visit after it.
    expect(items.map((s) => [s.runner, s.takenOver])).toEqual([
      ["build-host pid 4101", false],
      ["build-host pid 4101", false],
      ["spare-host pid 5202", true]
    ])
    expect(failed?.reminders.map((r) => r.ordinal)).toEqual([1])
    expect(failed?.note).toContain("GITHUB_TOKEN=[REDACTED]")
    expect(items.every((s) => s.final && s.end !== null && s.wait === null)).toBe(true)
    noSecret(items)
  })

  it("a step at a waiting checkpoint carries its question (redacted) and is not final", async () => {
    const [page] = await seeded(allSteps("run-ask", 50))
    const [ask] = page?.items ?? []
    expect(ask).toMatchObject({ outcome: "waiting", final: false, end: null, note: "waiting for an answer" })
    expect(ask?.wait).toMatchObject({ request: "req-ask", state: "open", by: null, answer: null })
    expect(ask?.wait?.question).toBe("Ship it with [REDACTED]? Answer yes or no.")
    noSecret(ask)
  })

  it("pages are bounded, follow on from their cursor without gaps or repeats, and keep deadlines", async () => {
    const { pages, whole, split } = await seeded(
      Effect.all({
        pages: allSteps("run-long", 10),
        whole: allSteps("run-long", MAX_PAGE),
        split: allSteps("run-deploy", 2)
      })
    )
    expect(pages.map((p) => p.items.length)).toEqual([10, 10, 5])
    expect(pages.map((p) => p.next)).toEqual(["10", "20", null])
    expect(pages.flatMap((p) => p.items.map((s) => s.seq))).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1)
    )
    expect(whole).toHaveLength(1)
    expect(whole[0]?.items).toEqual(pages.flatMap((p) => p.items))
    // The takeover's visit spans the page boundary: the later page still counts from its start.
    const [taken, failed] = [split[0]?.items[1], split[1]?.items[0]]
    expect(failed?.seq).toBe(3)
    expect(failed?.deadline).toBe((taken?.start ?? 0) + 30 * 60_000)
    expect(failed?.takenOver).toBe(true) // the runner before it is on the page before
  })

  it("intents with their life and resolution path, events with their text, both paged", async () => {
    const { intents, events, after } = await seeded(
      Effect.gen(function* () {
        const reads = yield* TimelineReads
        const intents = intentItems(yield* reads.intents("run-deploy", null, 1))
        const events = eventItems(yield* reads.events("run-deploy", 0, 10))
        const after = yield* reads.intents("run-deploy", JSON.parse(intents.items[0]?.cursor ?? "[]"), 10)
        return { intents, events, after }
      })
    )
    expect(intents.next).toBeNull()
    const [intent] = intents.items
    expect(intent).toMatchObject({
      cause: "failed",
      node: "test",
      resolution: "fallback",
      message: "msg-1",
      final: true
    })
    expect(intent?.claimedUntil).toBeNull()
    expect((intent?.created ?? 0) < (intent?.eligible ?? 0)).toBe(true)
    expect((intent?.eligible ?? 0) < (intent?.resolved ?? 0)).toBe(true)
    expect(after.rows).toEqual([])
    expect(events.items.map((e) => [e.seq, e.kind, e.text])).toEqual([
      [1, "presented", "shown to the session with [REDACTED]"]
    ])
    noSecret([intents, events])
  })

  it("runs filtered by state, workflow, session prefix, age and ID; the header's condition and error", async () => {
    const found = await seeded(
      Effect.gen(function* () {
        const reads = yield* TimelineReads
        const ids = (rows: ReadonlyArray<{ readonly runId: string }>) => rows.map((r) => r.runId)
        return {
          all: ids(yield* reads.runs({ limit: 10 })),
          failed: ids(yield* reads.runs({ state: "failed", limit: 10 })),
          deploy: ids(yield* reads.runs({ workflow: "deploy", limit: 10 })),
          session: ids(yield* reads.runs({ session: "s-de", limit: 10 })),
          recent: ids(
            yield* reads.runs({ createdSince: new Date(Date.now() - 25 * 60_000).toISOString(), limit: 10 })
          ),
          limited: ids(yield* reads.runs({ limit: 2 })),
          one: (yield* reads.runs({ runId: "run-deploy", limit: 1 })).map((run) => runView(run, Date.now())),
          ask: (yield* reads.runs({ runId: "run-ask", limit: 1 })).map((run) => runView(run, Date.now())),
          // The engine's message quotes the node's error, stored redacted, beside the raw original.
          quoted: (yield* reads.runs({ runId: "run-deploy", limit: 1 })).map(
            (run) =>
              runView(
                {
                  ...run,
                  error: {
                    message: 'node "test" failed: push refused: GITHUB_TOKEN=[REDACTED]',
                    nodeId: "test",
                    original: `push refused: GITHUB_TOKEN=${SECRET}`
                  }
                },
                Date.now()
              ).error
          )
        }
      })
    )
    expect(found.all).toEqual(["run-long", "run-ask", "run-deploy-2", "run-deploy"])
    expect(found.failed).toEqual(["run-deploy"])
    expect(found.deploy).toEqual(["run-deploy-2", "run-deploy"])
    expect(found.session).toEqual(["run-deploy-2", "run-deploy"])
    expect(found.recent).toEqual(["run-long"])
    expect(found.limited).toEqual(["run-long", "run-ask"])
    expect(found.one[0]).toMatchObject({
      condition: "failed",
      steps: 2,
      claims: 2,
      end: "failed (by the engine)"
    })
    expect(found.one[0]?.error).toBe("tests failed (token [REDACTED]) (at test): GITHUB_TOKEN=[REDACTED]")
    expect(found.ask[0]).toMatchObject({ condition: "waiting for an answer", kind: "waiting", ended: null })
    expect(found.quoted).toEqual(['node "test" failed: push refused: GITHUB_TOKEN=[REDACTED] (at test)'])
    noSecret(found)
  })

  it("the restart chain from the launch rows: the root, then the run that restarted it", async () => {
    const chains = await seeded(
      Effect.gen(function* () {
        const launches = yield* LaunchStore
        const child = Option.getOrNull(yield* launches.childOf("run-deploy"))
        const own = Option.getOrNull(yield* launches.get("run-deploy-2"))
        return {
          root: chainLinks("run-deploy", null, child === null ? [] : [child], null),
          restarted: chainLinks("run-deploy-2", own, [], null),
          alone: chainLinks("run-ask", null, [], null)
        }
      })
    )
    expect(chains.root.map((c) => [c.id, c.relation])).toEqual([
      ["run-deploy", "this run (root)"],
      ["run-deploy-2", "restart 1"]
    ])
    expect(chains.restarted.map((c) => [c.id, c.relation, c.note])).toEqual([
      ["run-deploy", "root", "failed (failed)"],
      ["run-deploy-2", "this run (restart 1)", null]
    ])
    expect(chains.alone).toEqual([])
  })

  it("a huge stored text is cut when read and clipped when shown; a secret past the cut never appears", async () => {
    const [page] = await seeded(
      Effect.gen(function* () {
        const runs = yield* RunStore
        yield* runs.reserve(sampleRun("run-huge", { targetSessionId: "s-huge" }))
        yield* runs.claim({ runId: "run-huge", token: "t", leaseMs: 60_000, mode: "activate" })
        yield* runs.startStep({ runId: "run-huge", token: "t" }, { nodeId: "big", attemptId: "a-big" })
        yield* runs.settle(
          { runId: "run-huge", token: "t" },
          {
            attemptId: "a-big",
            step: {
              _tag: "Outcome",
              outcome: "failed",
              error: `${"x ".repeat(100_000)}${SECRET}`,
              timeoutMs: null
            },
            next: { _tag: "End", state: "failed", error: { message: "big", nodeId: "big", original: null } }
          }
        )
        const read = yield* (yield* TimelineReads).steps("run-huge", 0, 10)
        expect(read.rows[0]?.error?.length).toBe(TEXT_READ)
        return [stepItems(read)]
      })
    )
    const note = page?.items[0]?.note ?? ""
    expect([...note].length).toBeLessThanOrEqual(MAX_TEXT)
    noSecret(page)
  })
})
