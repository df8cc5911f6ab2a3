import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { PiSession } from "../../src/session/pi-session.ts"

const message = (content: string) => ({ customType: "t", content, display: true, details: { n: content } })
const followUp = { deliverAs: "followUp", triggerTurn: true } as const
const passive = { deliverAs: "nextTurn", triggerTurn: false } as const

const withFake = <A, E>(program: Effect.Effect<A, E, PiSession | PiSessionFake>) =>
  Effect.provide(program, layerFake({ sessionId: "s1" }))

describe("PiSession fake", () => {
  it.effect("a triggering send while idle starts a turn that lasts until settle", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        expect(yield* session.isIdle).toBe(true)
        yield* session.send(message("a"), followUp)
        expect(yield* session.isIdle).toBe(false)
        expect(yield* fake.triggeredTurns).toBe(1)
        // A follow-up while busy joins the running turn: no second turn.
        yield* session.send(message("b"), followUp)
        expect(yield* fake.triggeredTurns).toBe(1)
        yield* fake.settle()
        expect(yield* session.isIdle).toBe(true)
        const sent = yield* fake.sent
        expect(sent.map((r) => [r.message.content, r.phase, r.startedTurn])).toEqual([
          ["a", "idle", true],
          ["b", "busy", false]
        ])
        expect((yield* session.branch).map((e) => e.content)).toEqual(["a", "b"])
      })
    )
  )

  it.effect("a settle handler holds triggering sends until it returns; settleDone waits for it", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        const gate = yield* Deferred.make<void>()
        const handler = yield* Effect.fork(
          fake.settleHandler(Effect.zipRight(fake.settle(), Deferred.await(gate)))
        )
        yield* Effect.yieldNow()
        const done = yield* Effect.fork(session.settleDone)
        expect([yield* session.isIdle, yield* session.settling]).toEqual([true, true])
        yield* session.send(message("held"), followUp)
        yield* session.send(message("note"), passive)
        // Only the passive message is written; the triggering one waits for the handler.
        expect((yield* session.branch).map((e) => e.content)).toEqual(["note"])
        expect((yield* fake.heldSends).map((m) => m.content)).toEqual(["held"])
        expect(done.unsafePoll()).toBeNull()
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(handler)
        yield* Fiber.join(done)
        expect(yield* session.settling).toBe(false)
        expect((yield* session.branch).map((e) => e.content)).toEqual(["note", "held"])
        expect(yield* fake.heldSends).toEqual([])
        expect((yield* fake.sent).map((r) => [r.message.content, r.startedTurn])).toEqual([
          ["note", false],
          ["held", true]
        ])
        expect(yield* session.isIdle).toBe(false)
      })
    )
  )

  it.effect("a passive send never starts a turn", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* session.send(message("progress"), passive)
        expect(yield* session.isIdle).toBe(true)
        expect(yield* fake.triggeredTurns).toBe(0)
      })
    )
  )

  it.effect("awaitIdle completes at once when idle and at the next settle when busy", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* session.awaitIdle
        yield* fake.startTurn
        const waiter = yield* Effect.fork(session.awaitIdle)
        yield* Effect.yieldNow()
        expect(yield* fake.waiting).toBe(1)
        expect(waiter.unsafePoll()).toBeNull()
        yield* fake.settle()
        yield* Fiber.join(waiter)
        expect(yield* fake.waiting).toBe(0)
      })
    )
  )

  it.effect("abort marks the turn aborting; it stays not idle until it settles", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* session.abort // idle: a counted no-op
        expect(yield* fake.phase).toBe("idle")
        yield* fake.startTurn
        yield* session.abort
        expect(yield* fake.phase).toBe("aborting")
        expect(yield* session.isIdle).toBe(false)
        expect(yield* fake.aborts).toBe(2)
        yield* fake.settle()
        expect(yield* fake.settles).toEqual([{ aborted: true }])
        expect(yield* session.isIdle).toBe(true)
      })
    )
  )

  it.effect("a message sent into an aborting turn is lost, as in Pi", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* fake.startTurn
        yield* session.abort
        yield* session.send(message("lost"), followUp)
        const [record] = yield* fake.sent
        expect(record?.entryId).toBeNull()
        expect(record?.phase).toBe("aborting")
        expect(yield* session.branch).toEqual([])
        expect(yield* fake.triggeredTurns).toBe(0)
      })
    )
  )

  it.effect("scripted send failures fail with SendFailed and record nothing", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* fake.failNextSends(2)
        for (const n of [1, 2]) {
          const error = yield* Effect.flip(session.send(message(`x${n}`), followUp))
          expect(error._tag).toBe("SendFailed")
        }
        yield* session.send(message("ok"), passive)
        yield* fake.failSendsWhen((m) => m.content === "bad")
        expect((yield* Effect.flip(session.send(message("bad"), passive)))._tag).toBe("SendFailed")
        yield* fake.failSendsWhen(null)
        yield* session.send(message("bad"), passive)
        expect(yield* fake.failedSends).toBe(3)
        expect((yield* fake.sent).map((r) => r.message.content)).toEqual(["ok", "bad"])
      })
    )
  )

  it.effect("each session ID has its own branch; appendBranch writes without sending", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        const entryId = yield* fake.appendBranch({ customType: "t", content: "crash", details: { k: 1 } })
        expect(yield* session.branch).toEqual([
          { entryId, customType: "t", content: "crash", details: { k: 1 } }
        ])
        expect(yield* fake.sent).toEqual([])
        yield* fake.setSessionId("s2")
        expect(yield* session.sessionId).toBe("s2")
        expect(yield* session.branch).toEqual([])
        yield* fake.setSessionId("s1")
        expect((yield* session.branch).length).toBe(1)
      })
    )
  )

  it.effect("lifecycle flags, notifications and the abort hook are observable", () =>
    withFake(
      Effect.gen(function* () {
        const session = yield* PiSession
        const fake = yield* PiSessionFake
        yield* fake.setShuttingDown(true)
        yield* fake.setUserHold(true)
        expect(yield* session.lifecycle).toEqual({ shuttingDown: true, userHold: true })
        yield* session.notify("careful", "warning")
        expect(yield* fake.notifications).toEqual([{ text: "careful", level: "warning" }])
        let seen = -1
        yield* fake.onAbort(Effect.flatMap(fake.aborts, (n) => Effect.sync(() => (seen = n))))
        yield* session.abort
        expect(seen).toBe(0) // the hook runs before the abort takes effect
      })
    )
  )
})
