/**
 * The three conditions of the delivery protocol (src/delivery/protocol.ts, docs/protocol.md),
 * one test each, plus the model constants derived from them. Each runs the real coordinator on
 * a real SQLite file with a session that, like Pi from an `agent_settled` handler, writes a sent
 * message only when the test says so; store calls and sends are logged in order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Fiber, Layer, Ref, Scope, TestClock } from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { DEFAULT_LEASE_MS } from "../../src/domain/timing-policy.ts"
import {
  leaseCoversWriteDelay,
  modelConstants,
  RELEASE_OTHERS_BEFORE_SEND,
  RENEW_BEFORE_SEND,
  WRITE_DELAY_BOUND_MS
} from "../../src/delivery/protocol.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { type CustomMessage, type DeliveryOptions, PiSession } from "../../src/session/pi-session.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { run, terminal } from "../conformance/harness.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { withTimings } from "../support/timing.ts"

const makeProcess = (
  filename: string,
  timings: { readonly deliveryLease?: Duration.Duration },
  renewDelayMs = 0
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const session = yield* Layer.build(layerFake({ sessionId: "session-1" })).pipe(Scope.extend(scope))
    const fake = Context.get(session, PiSessionFake)
    const live = Context.get(session, PiSession)
    const log = yield* Ref.make<ReadonlyArray<string>>([])
    const note = (entry: string) => Ref.update(log, (l) => [...l, entry])
    const queue = yield* Ref.make<ReadonlyArray<readonly [CustomMessage, DeliveryOptions]>>([])
    const deferring = PiSession.of({
      ...live,
      send: (message, sendOptions) =>
        Effect.zipRight(
          note(`send ${String(message.details.turnIntentId)}`),
          Ref.update(queue, (q) => [...q, [message, sendOptions] as const])
        )
    })
    const logged = (store: TurnIntentStoreService): TurnIntentStoreService => ({
      ...store,
      claimEligibleForSession: (input) =>
        Effect.zipRight(note("claim"), store.claimEligibleForSession(input)),
      renew: (input) =>
        Effect.zipRight(
          note(`renew ${input.intentId}`),
          renewDelayMs > 0 ? Effect.delay(store.renew(input), renewDelayMs) : store.renew(input)
        ),
      release: (input) => Effect.zipRight(note(`release ${input.intentId}`), store.release(input)),
      resolve: (input) => Effect.zipRight(note(`resolve ${input.intentId}`), store.resolve(input))
    })
    const storeLayer = layerSqlite({ filename })
    const base = yield* Layer.build(storeLayer).pipe(Scope.extend(scope))
    const context = yield* Layer.build(
      Core.layer().pipe(
        Layer.provide(withTimings({ syncInterval: null, ...timings })),
        Layer.provide(Layer.succeed(TurnIntentStore, logged(Context.get(base, TurnIntentStore)))),
        Layer.provide(Layer.succeed(PiSession, deferring))
      )
    ).pipe(Scope.extend(scope))
    return {
      scope,
      fake,
      log: Ref.getAndSet(log, []),
      coordinator: Context.get(context, Coordinator),
      events: Context.get(context, SourceEvents),
      store: Context.get(base, TurnIntentStore),
      /** The handlers returned: Pi writes what was sent. */
      flush: Effect.flatMap(Ref.getAndSet(queue, []), (sends) =>
        Effect.forEach(sends, ([message, o]) => live.send(message, o), { discard: true })
      ),
      /** Pi lost what was sent (e.g. the process died before writing it). */
      drop: Ref.set(queue, [])
    }
  })

const failedRun = (runId: string) => terminal("failed", null, { run: run({ runId }) })

describe("condition 1: the lease outlasts Pi's write delay", () => {
  it("the constants keep it, and shorter leases are refused", () => {
    expect(leaseCoversWriteDelay(DEFAULT_LEASE_MS, WRITE_DELAY_BOUND_MS)).toBe(true)
    expect(leaseCoversWriteDelay(WRITE_DELAY_BOUND_MS, WRITE_DELAY_BOUND_MS)).toBe(false)
    expect(leaseCoversWriteDelay(1_000, 5_000)).toBe(false)
  })

  it.scoped("a coordinator with a lease not above the write-delay bound does not start", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const exit = yield* Effect.exit(
        makeProcess(filename, { deliveryLease: Duration.millis(WRITE_DELAY_BOUND_MS) })
      )
      // The same lease one millisecond longer starts: the refusal is about condition 1 only.
      expect(
        Exit.isSuccess(
          yield* Effect.exit(
            makeProcess(filename, { deliveryLease: Duration.millis(WRITE_DELAY_BOUND_MS + 1) })
          )
        )
      ).toBe(true)
      expect(Exit.isFailure(exit)).toBe(true)
    })
  )

  it.scoped("an unwritten message is kept (no second send) until the bound, then counts as lost", () =>
    Effect.gen(function* () {
      const p = yield* makeProcess(yield* tempDbPath, {})
      const { intentId } = yield* p.events.publish(failedRun("run-1"))
      expect((yield* p.coordinator.onSessionStart).delivered).toEqual([intentId])
      // Within the bound: the claim is kept and renewed, nothing is sent again.
      yield* TestClock.adjust(WRITE_DELAY_BOUND_MS)
      expect((yield* p.coordinator.syncFallbacks("periodic")).delivered).toEqual([])
      const [row] = yield* p.store.list({ limit: 1 })
      expect(row?.resolvedAt).toBeNull()
      expect(row?.deliveryClaimExpiresAt).toBeGreaterThan(WRITE_DELAY_BOUND_MS + DEFAULT_LEASE_MS - 1)
      // Past the bound on an idle session, Pi has lost it: it is sent again, once.
      yield* p.drop
      yield* TestClock.adjust(1)
      expect((yield* p.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      yield* p.flush
      yield* p.fake.settle()
      expect((yield* p.coordinator.onSettled).repaired).toEqual([intentId])
      expect((yield* p.fake.sent).length).toBe(1)
    })
  )
})

describe("condition 2: renew right before the send", () => {
  it.scoped("every send comes directly after a renewal of its claim", () =>
    Effect.gen(function* () {
      expect(RENEW_BEFORE_SEND).toBe(true)
      const p = yield* makeProcess(yield* tempDbPath, {})
      const { intentId } = yield* p.events.publish(failedRun("run-1"))
      yield* p.log
      yield* p.coordinator.onSessionStart
      const log = yield* p.log
      const sendAt = log.indexOf(`send ${intentId}`)
      expect(sendAt).toBeGreaterThan(0)
      expect(log[sendAt - 1]).toBe(`renew ${intentId}`)
    })
  )

  it.scoped("a renewal that took too much of the lease sends nothing", () =>
    Effect.gen(function* () {
      // The renewal answers only after lease - bound has passed: too little lease is left to
      // cover Pi's write, so the claim is released and nothing is sent.
      const p = yield* makeProcess(yield* tempDbPath, {}, DEFAULT_LEASE_MS - WRITE_DELAY_BOUND_MS)
      yield* p.events.publish(failedRun("run-1"))
      const fiber = yield* Effect.fork(p.coordinator.onSessionStart)
      yield* TestClock.adjust(DEFAULT_LEASE_MS - WRITE_DELAY_BOUND_MS)
      const report = yield* Fiber.join(fiber)
      expect(report).toMatchObject({ delivered: [], skipped: "slowRenewal" })
      expect((yield* p.log).filter((entry) => entry.startsWith("send "))).toEqual([])
      const [row] = yield* p.store.list({ limit: 1 })
      expect(row?.deliveryClaimToken).toBeNull()
    })
  )
})

describe("condition 3: nothing slow in the settle handler after the send", () => {
  it.scoped("a pass that claimed several intents releases the others before it sends", () =>
    Effect.gen(function* () {
      expect(RELEASE_OTHERS_BEFORE_SEND).toBe(true)
      const p = yield* makeProcess(yield* tempDbPath, {})
      for (const runId of ["run-a", "run-b", "run-c"]) yield* p.events.publish(failedRun(runId))
      yield* p.log
      const report = yield* p.coordinator.onSettled
      expect(report.delivered).toHaveLength(1)
      const log = yield* p.log
      const sendAt = log.findIndex((entry) => entry.startsWith("send "))
      expect(log.slice(0, sendAt).filter((entry) => entry.startsWith("release "))).toHaveLength(2)
      // After the send: no store call at all (Pi writes the message only once the handler returns).
      expect(log.slice(sendAt + 1)).toEqual([])
    })
  )
})

describe("model constants", () => {
  it("come from the protocol's lease and write-delay bound, rounded against the protocol", () => {
    const derived = modelConstants(DEFAULT_LEASE_MS, WRITE_DELAY_BOUND_MS)
    expect(derived).toEqual({ tickMs: 15_000, lease: 2, writeDelay: 1 })
    expect(derived.lease * derived.tickMs).toBeLessThanOrEqual(DEFAULT_LEASE_MS)
    expect(derived.writeDelay * derived.tickMs).toBeGreaterThanOrEqual(WRITE_DELAY_BOUND_MS)
    expect(modelConstants(60_000, 5_000).lease).toBeGreaterThan(modelConstants(60_000, 5_000).writeDelay)
  })
})
