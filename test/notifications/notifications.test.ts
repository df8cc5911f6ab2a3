import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect, Either, Fiber, TestClock } from "effect"
import { finalNotificationId } from "../../src/notifications/final-on-end.ts"
import { NOTIFICATION_SCHEMA, type NotificationPayload } from "../../src/store/notification-store.ts"
import { isPgLocation, pgQuery, whenDone } from "../support/backend.ts"
import { makeKit, newRun } from "./kit.ts"

const texts = (payloads: ReadonlyArray<{ readonly payload: NotificationPayload }>) =>
  payloads.map((n) => (n.payload.kind === "progress" ? n.payload.text : `final:${n.payload.state}`))

const report = (runId: string, text: string) => ({ runId, text, nodeId: "first", attemptId: "att-1" })

/** Let forked fibers (timers that just fired) run to completion. */
const drain = Effect.repeatN(Effect.yieldNow(), 20)

describe("progress reports", () => {
  it.scoped("at most one stored per second per run; a newer report replaces a held one", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      yield* k.runs.reserve(newRun("r2", "s2"))
      expect(yield* k.notifications.progress(report("r1", "one"))).toEqual({ runId: "r1", status: "stored" })
      expect((yield* k.notifications.progress(report("r1", "two"))).status).toBe("coalesced")
      expect((yield* k.notifications.progress(report("r1", "three"))).status).toBe("coalesced")
      // Another run has its own window.
      expect((yield* k.notifications.progress(report("r2", "other"))).status).toBe("stored")
      yield* TestClock.adjust("999 millis")
      yield* drain
      expect(texts(yield* k.store.list({ runId: "r1", limit: 10 }))).toEqual(["one"])
      yield* TestClock.adjust("1 millis")
      yield* drain
      // "two" was replaced while held: only the newest report of the window is stored.
      const held = whenDone(k.store.list({ runId: "r1", limit: 10 }), (rows) => rows.length >= 2)
      expect(texts(yield* held)).toEqual(["one", "three"])
      // The window runs from the newest stored report.
      expect((yield* k.notifications.progress(report("r1", "four"))).status).toBe("coalesced")
      yield* TestClock.adjust("1 seconds")
      yield* drain
      yield* whenDone(k.store.list({ runId: "r1", limit: 10 }), (rows) => rows.length >= 3)
      yield* TestClock.adjust("5 seconds")
      expect((yield* k.notifications.progress(report("r1", "five"))).status).toBe("stored")
      const stored = yield* k.store.list({ runId: "r1", limit: 10 })
      expect(texts(stored)).toEqual(["one", "three", "four", "five"])
      expect(stored.map((n) => n.createdAt)).toEqual([
        "1970-01-01T00:00:00.000Z",
        "1970-01-01T00:00:01.000Z",
        "1970-01-01T00:00:02.000Z",
        "1970-01-01T00:00:07.000Z"
      ])
      // Each stored report was shown to the owner session (s1); r2's belongs to s2.
      expect((yield* k.shown).map((r) => r.message.content)).toEqual([
        "Workflow demo (run r1): one",
        "Workflow demo (run r1): three",
        "Workflow demo (run r1): four",
        "Workflow demo (run r1): five"
      ])
    })
  )

  it.scoped("bad reports are refused with a clear reason and store nothing", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      const refused = (text: string, runId = "r1") =>
        Effect.map(Effect.either(k.notifications.progress(report(runId, text))), (result) =>
          Either.isLeft(result) ? result.left.message : "accepted"
        )
      expect(yield* refused("")).toMatch(/must not be empty/)
      expect(yield* refused("   \n")).toMatch(/must not be empty/)
      expect(yield* refused("x".repeat(2049))).toMatch(/2049 bytes; the limit is 2048 bytes/)
      // Bytes, not characters: 683 euro signs are 2049 bytes.
      expect(yield* refused("€".repeat(683))).toMatch(/2049 bytes/)
      expect(yield* refused("fine", "nope")).toMatch(/run nope does not exist/)
      expect(yield* k.all).toEqual([])
      expect(yield* refused("x".repeat(2048))).toBe("accepted")
      const cancelled = yield* k.endingRuns.cancel("r1", "user")
      expect(cancelled._tag).toBe("Cancelled")
      yield* TestClock.adjust("10 seconds")
      expect(yield* refused("too late")).toMatch(/run r1 has ended \(cancelled\); progress is closed/)
      expect(texts(yield* k.all)).toEqual(["x".repeat(2048), "final:cancelled"])
    })
  )
})

describe("final notifications", () => {
  it.scoped(
    "a run's end writes one final with its state and a one-line summary; a held report goes first",
    () =>
      Effect.gen(function* () {
        const k = yield* makeKit()
        yield* k.runs.reserve(newRun("r1"))
        const claimed = yield* k.runs.claim({ runId: "r1", token: "t1", leaseMs: 60_000, mode: "activate" })
        expect(claimed.state).toBe("running")
        yield* k.notifications.progress(report("r1", "half way"))
        yield* k.notifications.progress(report("r1", "almost"))
        const ended = yield* k.endingRuns.settle(
          { runId: "r1", token: "t1" },
          {
            next: {
              _tag: "End",
              state: "failed",
              error: { message: "disk\nfull", nodeId: "first", original: null }
            }
          }
        )
        expect(ended.state).toBe("failed")
        const all = yield* k.all
        expect(texts(all)).toEqual(["half way", "almost", "final:failed"])
        expect(all[2]).toMatchObject({
          notificationId: finalNotificationId("r1"),
          kind: "final",
          targetSessionId: "s1",
          payload: {
            schema: NOTIFICATION_SCHEMA,
            kind: "final",
            workflowName: "demo",
            state: "failed",
            summary: "failed after 0 steps: disk full"
          }
        })
        // A second end cannot happen (the claim is gone) and writes nothing.
        const again = yield* Effect.either(
          k.endingRuns.settle({ runId: "r1", token: "t1" }, { next: { _tag: "End", state: "completed" } })
        )
        expect(Either.isLeft(again)).toBe(true)
        expect(yield* k.all).toHaveLength(3)
        // The timer of the held report was cancelled by the end: nothing more arrives later.
        yield* TestClock.adjust("5 seconds")
        yield* drain
        expect(yield* k.all).toHaveLength(3)
      })
  )

  it.scoped("an end that fails writes no final (one transaction)", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      yield* k.runs.claim({ runId: "r1", token: "t1", leaseMs: 60_000, mode: "activate" })
      const lost = yield* Effect.either(
        k.endingRuns.settle({ runId: "r1", token: "other" }, { next: { _tag: "End", state: "completed" } })
      )
      expect(Either.isLeft(lost) && lost.left._tag).toBe("ClaimLost")
      expect(yield* k.all).toEqual([])
      // A cancel that is only requested (a live runner will end the run) writes no final either.
      const requested = yield* k.endingRuns.cancel("r1", "agent")
      expect(requested._tag).toBe("Requested")
      expect(yield* k.all).toEqual([])
    })
  )
})

describe("delivery", () => {
  it.scoped(
    "no turn, to the owner session only, as the run's footer line; pending ones at the owner's next start",
    () =>
      Effect.gen(function* () {
        const k = yield* makeKit()
        yield* k.runs.reserve(newRun("mine", "s1"))
        yield* k.runs.reserve(newRun("theirs", "s2"))
        yield* k.fake.startTurn // a model turn is running
        yield* k.notifications.progress(report("mine", "working"))
        yield* k.notifications.progress(report("theirs", "not for s1"))
        const shown = yield* k.shown
        expect(shown).toHaveLength(1)
        expect(shown[0]).toMatchObject({
          sessionId: "s1",
          startedTurn: false,
          options: { triggerTurn: false },
          message: {
            // Recorded in the session, not shown in the conversation: the footer line shows it.
            display: false,
            details: { schema: NOTIFICATION_SCHEMA, runId: "mine", kind: "progress" }
          }
        })
        expect(yield* k.fake.statusLines).toEqual(
          new Map([["pi-workflows:mine", "… demo (run mine): working"]])
        )
        expect(yield* k.fake.triggeredTurns).toBe(0)
        expect((yield* k.store.list({ runId: "mine", limit: 5 }))[0]?.deliveredAt).not.toBeNull()
        // Delivered once: another pass shows nothing new.
        expect(yield* k.notifier.deliverPending).toBe(0)
        const pending = yield* k.store.list({ state: "pending", limit: 5 })
        expect(pending.map((n) => n.runId)).toEqual(["theirs"])
        // The owner of "theirs" starts (a later Pi process on the same file): it gets exactly that one.
        const later = yield* makeKit({ path: k.path })
        yield* later.fake.setSessionId("s2")
        expect(yield* later.notifier.deliverPending).toBe(1)
        expect((yield* later.shown).map((r) => [r.sessionId, r.message.content])).toEqual([
          ["s2", "Workflow demo (run theirs): not for s1"]
        ])
        expect(yield* later.store.list({ state: "pending", limit: 5 })).toEqual([])
      })
  )

  it.scoped("at most once: marked before shown, so a failed show is never repeated", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      yield* k.fake.failNextSends(1) // Pi refuses the show (or the process dies right here)
      yield* k.notifications.progress(report("r1", "lost"))
      expect(yield* k.fake.failedSends).toBe(1)
      expect(yield* k.store.list({ state: "pending", limit: 5 })).toEqual([])
      expect(yield* k.notifier.deliverPending).toBe(0)
      expect(yield* k.shown).toEqual([])
    })
  )

  it.scoped("a crash between store and show: the next start shows it once, even with two deliverers", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      // Stored by a process that died before showing it.
      yield* k.store.insert({
        notificationId: "n-1",
        runId: "r1",
        targetSessionId: "s1",
        payload: {
          schema: NOTIFICATION_SCHEMA,
          kind: "progress",
          workflowName: "demo",
          text: "saved",
          nodeId: null,
          attemptId: null
        }
      })
      // Two deliverers of the same session race on one file (an extension restart inside one Pi).
      const other = yield* makeKit({ path: k.path, sessionContext: k.sessionContext })
      const [a, b] = yield* Effect.all([k.notifier.deliverPending, other.notifier.deliverPending], {
        concurrency: "unbounded"
      })
      expect(a + b).toBe(1)
      expect((yield* k.shown).map((r) => r.message.content)).toEqual(["Workflow demo (run r1): saved"])
    })
  )

  it.scoped("a long backlog is shown whole, in stored order, across batches", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      for (let i = 0; i < 120; i++) {
        yield* k.store.insert({
          notificationId: `n-${i}`,
          runId: "r1",
          targetSessionId: "s1",
          payload: {
            schema: NOTIFICATION_SCHEMA,
            kind: "progress",
            workflowName: "demo",
            text: `step ${i}`,
            nodeId: null,
            attemptId: null
          }
        })
      }
      expect(yield* k.notifier.deliverPending).toBe(120)
      const shown = (yield* k.shown).map((r) => r.message.content)
      expect(shown).toEqual(Array.from({ length: 120 }, (_, i) => `Workflow demo (run r1): step ${i}`))
    })
  )

  it.scoped("a row that does not decode (an alpha-era payload) is skipped, not fatal", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      const alphaRow =
        "INSERT INTO workflow_notifications VALUES ('old', 'r0', 's1', 'progress', '{\"message\":\"alpha\"}', '1970-01-01T00:00:00.000Z', NULL)"
      if (isPgLocation(k.path)) yield* Effect.promise(() => pgQuery(k.path, alphaRow))
      else {
        const raw = new Sqlite(k.path)
        raw.prepare(alphaRow).run()
        raw.close()
      }
      yield* k.store.insert({
        notificationId: "new",
        runId: "r1",
        targetSessionId: "s1",
        payload: {
          schema: NOTIFICATION_SCHEMA,
          kind: "final",
          workflowName: "demo",
          state: "completed",
          summary: "done"
        }
      })
      expect(yield* k.notifier.deliverPending).toBe(1)
      expect((yield* k.shown).map((r) => r.message.content)).toEqual(["Workflow demo (run r1) done"])
      expect((yield* k.all).map((n) => n.notificationId)).toEqual(["new"])
    })
  )

  it.scoped("nothing is taken while Pi shuts down; the next start shows it", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      yield* k.runs.reserve(newRun("r1"))
      yield* k.fake.setShuttingDown(true)
      yield* k.notifications.progress(report("r1", "late"))
      expect(yield* k.shown).toEqual([])
      expect(yield* k.store.list({ state: "pending", limit: 5 })).toHaveLength(1)
      yield* k.fake.setShuttingDown(false)
      expect(yield* k.notifier.deliverPending).toBe(1)
    })
  )

  it.scoped("the store's list and takePending refuse bad bounds without changing anything", () =>
    Effect.gen(function* () {
      const k = yield* makeKit()
      for (const limit of [0, -1, 1001, 1.5, Number.NaN]) {
        expect(Either.isLeft(yield* Effect.either(k.store.list({ limit })))).toBe(true)
        expect(
          Either.isLeft(yield* Effect.either(k.store.takePending({ targetSessionId: "s1", limit })))
        ).toBe(true)
      }
      const badId = yield* Effect.either(
        k.store.insert({
          notificationId: "",
          runId: "r1",
          targetSessionId: "s1",
          payload: {
            schema: NOTIFICATION_SCHEMA,
            kind: "final",
            workflowName: "demo",
            state: "completed",
            summary: "x"
          }
        })
      )
      expect(Either.isLeft(badId) && badId.left.message).toMatch(/notificationId/)
      expect(yield* k.all).toEqual([])
      const fiber = yield* Effect.fork(k.notifier.deliverPending)
      expect(yield* Fiber.join(fiber)).toBe(0)
    })
  )
})
