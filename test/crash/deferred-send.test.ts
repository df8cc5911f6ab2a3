/**
 * Pi defers a message sent from an `agent_settled` handler until every handler has returned
 * (`sendMessage` returns at once, the entry is written later), and fallbacks are sent from
 * exactly there. A crash in between must not leave the intent resolved without its message:
 * found by the real-Pi crash trial at `afterResolve` (test/crash/pi-crash.test.ts) and by the
 * simulation (seed 1092). These tests pin it on the fake session, with a session that defers
 * sends the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Ref, Scope, TestClock } from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { type CustomMessage, type DeliveryOptions, PiSession } from "../../src/session/pi-session.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { FALLBACK, run, terminal } from "../conformance/harness.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { NoSyncPass } from "../support/timing.ts"

/** A process: the core on `filename` over the session, sends deferred when `defer` is set. */
const makeProcess = (filename: string, session: Context.Context<PiSession | PiSessionFake>, defer: boolean) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const live = Context.get(session, PiSession)
    const queue = yield* Ref.make<ReadonlyArray<readonly [CustomMessage, DeliveryOptions]>>([])
    const deferring = PiSession.of({
      ...live,
      send: (message, options) => Ref.update(queue, (q) => [...q, [message, options] as const])
    })
    const context = yield* Layer.build(
      Core.layer().pipe(
        Layer.provide(NoSyncPass),
        Layer.provideMerge(layerSqlite({ filename })),
        Layer.provide(Layer.succeed(PiSession, defer ? deferring : live))
      )
    ).pipe(Scope.extend(scope))
    return {
      scope,
      coordinator: Context.get(context, Coordinator),
      events: Context.get(context, SourceEvents),
      store: Context.get(context, TurnIntentStore),
      /** The handlers have returned: Pi writes the deferred messages. */
      flush: Effect.flatMap(Ref.getAndSet(queue, []), (sends) =>
        Effect.forEach(sends, ([message, options]) => live.send(message, options), { discard: true })
      )
    }
  })

const carrying = (fake: Context.Tag.Service<PiSessionFake>, intentId: string | null) =>
  Effect.map(fake.branch, (branch) =>
    branch.filter(
      (e) =>
        typeof e.details === "object" &&
        e.details !== null &&
        "turnIntentId" in e.details &&
        e.details.turnIntentId === intentId
    )
  )

describe("a fallback sent from agent_settled, before Pi writes it", () => {
  // Was the known gap (a) of docs/reliability.md: the intent was resolved at the send, and the
  // message died with the process. Now it is resolved only once the branch shows it.
  it.scoped("a crash right after the send: the restarted process delivers it, exactly once", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const session = yield* Layer.build(layerFake({ sessionId: "session-1" }))
      const fake = Context.get(session, PiSessionFake)
      const first = yield* makeProcess(filename, session, true)
      const { intentId } = yield* first.events.publish(terminal("failed", null, { run: run() }))
      expect((yield* first.coordinator.onSettled).delivered).toEqual([intentId])
      // SIGKILL before the handlers return: Pi never writes the message.
      yield* Scope.close(first.scope, Exit.void)
      expect(yield* fake.branch).toEqual([])

      yield* TestClock.adjust(30_000) // the dead process's claim runs out
      const second = yield* makeProcess(filename, session, false)
      yield* second.coordinator.onSessionStart
      yield* fake.settle()
      yield* second.coordinator.onSettled
      expect(yield* carrying(fake, intentId)).toHaveLength(1)
      const [row] = yield* second.store.list({ limit: 10 })
      expect(row?.resolution).toBe("fallback")
    })
  )

  it.scoped(
    "without a crash: Pi writes it, the next pass records the resolution, nothing is sent twice",
    () =>
      Effect.gen(function* () {
        const filename = yield* tempDbPath
        const session = yield* Layer.build(layerFake({ sessionId: "session-1" }))
        const fake = Context.get(session, PiSessionFake)
        const p = yield* makeProcess(filename, session, true)
        const { intentId } = yield* p.events.publish(terminal("failed", null, { run: run() }))
        expect((yield* p.coordinator.onSettled).delivered).toEqual([intentId])
        yield* p.flush // the handlers returned: the fallback's turn starts
        yield* fake.settle()
        const next = yield* p.coordinator.onSettled
        yield* p.flush
        expect(next.delivered).toEqual([])
        expect(yield* carrying(fake, intentId)).toHaveLength(1)
        expect((yield* fake.sent).filter((r) => r.message.customType === FALLBACK)).toHaveLength(1)
        const [row] = yield* p.store.list({ limit: 10 })
        expect(row?.resolvedAt).not.toBeNull()
        expect(row?.resolution).toBe("fallback")
      })
  )
})
