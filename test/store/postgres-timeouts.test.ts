/**
 * Every wait on PostgreSQL is bounded by the timing policy (src/store/pg/database-pg.ts): the
 * sessions start with `statement_timeout` and `idle_in_transaction_session_timeout` besides
 * `lock_timeout`, and the client stops waiting over a stalled connection. A statement the server
 * runs too long, a statement whose answer never arrives (the proxy holds every packet) and a
 * transaction left idle each fail typed within the bound, and the store, and delivery, go on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { DEFAULT_TIMING_POLICY, TimingPolicy } from "../../src/domain/timing-policy.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { Database } from "../../src/store/database.ts"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import { sqlState } from "../../src/store/store-errors.ts"
import { layerTurnIntentStorePg } from "../../src/store/pg/database-pg.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { freshPgUrl, pgQuery } from "../support/backend.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { startPgProxy } from "../support/pg-proxy.ts"
import { NoSyncPass } from "../support/timing.ts"

const BUSY_MS = 100
const STATEMENT_MS = 500
const IDLE_MS = 500
/** The policy of these tests: short bounds, so a stall shows within a second. */
const policy = {
  ...DEFAULT_TIMING_POLICY,
  pgStatementTimeout: Duration.millis(STATEMENT_MS),
  pgIdleInTransactionTimeout: Duration.millis(IDLE_MS)
}
/** The client gives up `STATEMENT_MS` + its margin (500 ms here) after sending; generous slack for a loaded machine. */
const BOUND_MS = 2 * STATEMENT_MS + 1_500

const withPolicy = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, TimingPolicy, policy)

const intentStoreAt = (url: string) =>
  Effect.map(
    withPolicy(Layer.build(layerTurnIntentStorePg({ url, busyTimeoutMs: BUSY_MS }))),
    Context.get(TurnIntentStore)
  )

/** `effect`'s exit and how long it took on the wall clock; a hang shows as a 10 s timeout. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(
      effect.pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => "hung" as const }))
    )
    return { exit, ms: (yield* Clock.currentTimeMillis) - started }
  })

/** The typed failure of an exit, or a description of what it was instead. */
const typedFailure = <A, E>(exit: Exit.Exit<A, E>): E | string => {
  if (Exit.isSuccess(exit)) return "succeeded"
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  return failure ?? `not a typed failure: ${exit.cause._tag}`
}

describe("PostgreSQL sessions start with every bound of the timing policy", () => {
  it.scoped(
    "defaults: lock_timeout the lock budget, statement and idle-in-transaction twice it (at least 10 s)",
    () =>
      Effect.gen(function* () {
        const url = yield* freshPgUrl
        const show = (options: DatabasePg.PgDatabaseOptions) =>
          Effect.gen(function* () {
            const sql = Context.get(yield* Layer.build(DatabasePg.layer(options)), SqlClient.SqlClient)
            const rows = yield* sql<{ name: string; setting: string }>`SELECT name, setting FROM pg_settings
            WHERE name IN ('lock_timeout', 'statement_timeout', 'idle_in_transaction_session_timeout') ORDER BY name`
            return Object.fromEntries(rows.map((row) => [row.name, Number(row.setting)]))
          })
        expect(yield* show({ url })).toEqual({
          idle_in_transaction_session_timeout: 10_000,
          lock_timeout: 5_000,
          statement_timeout: 10_000
        })
        expect(yield* show({ url, busyTimeoutMs: 8_000 })).toEqual({
          idle_in_transaction_session_timeout: 16_000,
          lock_timeout: 8_000,
          statement_timeout: 16_000
        })
        expect(yield* withPolicy(show({ url, busyTimeoutMs: BUSY_MS }))).toEqual({
          idle_in_transaction_session_timeout: IDLE_MS,
          lock_timeout: BUSY_MS,
          statement_timeout: STATEMENT_MS
        })
      })
  )

  it.scoped("a statement timeout not above the lock budget is refused at open, typed", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const exit = yield* Effect.exit(
        Layer.build(DatabasePg.layer({ url, busyTimeoutMs: 1_000 })).pipe(
          Effect.provideService(TimingPolicy, {
            ...DEFAULT_TIMING_POLICY,
            pgStatementTimeout: Duration.millis(800)
          })
        )
      )
      const failure = typedFailure(exit)
      expect(typeof failure === "object" && failure._tag).toBe("StoreFailure")
      expect(typeof failure === "object" && failure.message).toMatch(
        /pgStatementTimeout .* must exceed the lock budget/
      )
    })
  )
})

describe("a stalled server", () => {
  it.live(
    "a statement the server runs past statement_timeout fails typed within the bound; the store works after",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const url = yield* freshPgUrl
          const store = yield* intentStoreAt(url)
          const intent = yield* store.ensure(sampleIntent())
          // Another program makes every update of the table wait 30 s on the server (no lock involved).
          yield* Effect.promise(() =>
            pgQuery(
              url,
              `CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NEW; END $$;
             CREATE TRIGGER stall BEFORE UPDATE ON workflow_turn_intents FOR EACH ROW EXECUTE FUNCTION stall();`
            )
          )
          const { exit, ms } = yield* timed(store.makeEligible({ intentId: intent.intentId }))
          const failure = typedFailure(exit)
          expect(typeof failure === "object" && failure._tag, String(failure)).toBe("StoreFailure")
          // The server's own cancellation: SQLSTATE 57014 (query_canceled).
          expect(sqlState(typeof failure === "object" ? failure.cause : undefined)).toBe("57014")
          expect(ms).toBeLessThan(BOUND_MS)
          yield* Effect.promise(() => pgQuery(url, "DROP TRIGGER stall ON workflow_turn_intents"))
          // Cancelled on the server: nothing was written, and the next call works on the same pool.
          expect(Option.getOrThrow(yield* store.get(intent.intentId)).eligibleAt).toBeNull()
          expect((yield* store.makeEligible({ intentId: intent.intentId })).eligibleAt).not.toBeNull()
        })
      )
  )

  it.live(
    "a statement on a stalled connection fails typed within the client's bound; after the stall it works",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const proxy = yield* startPgProxy(yield* freshPgUrl)
          const store = yield* intentStoreAt(proxy.url)
          const intent = yield* store.ensure(sampleIntent())
          yield* proxy.stall
          const { exit, ms } = yield* timed(store.get(intent.intentId))
          const failure = typedFailure(exit)
          expect(typeof failure === "object" && failure._tag, String(failure)).toBe("StoreFailure")
          expect(ms).toBeLessThan(BOUND_MS)
          yield* proxy.heal
          expect(Option.getOrThrow(yield* store.get(intent.intentId)).intentId).toBe(intent.intentId)
        })
      )
  )

  it.live(
    "delivery goes on: a fallback pass through a stalled connection ends within the bound, the next one delivers",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const proxy = yield* startPgProxy(yield* freshPgUrl)
          const stores = yield* withPolicy(
            Layer.build(layerTurnIntentStorePg({ url: proxy.url, busyTimeoutMs: BUSY_MS }))
          )
          const session = yield* Layer.build(layerFake({ sessionId: "session-1" }))
          const core = yield* Layer.build(
            Core.layer().pipe(
              Layer.provide(NoSyncPass),
              Layer.provide(Layer.succeedContext(stores)),
              Layer.provide(Layer.succeedContext(session))
            )
          )
          const coordinator = Context.get(core, Coordinator)
          const fake = Context.get(session, PiSessionFake)
          const intent = yield* Context.get(stores, TurnIntentStore).ensure(
            sampleIntent({ targetSessionId: "session-1", eligible: true })
          )
          yield* proxy.stall
          const stalled = yield* timed(coordinator.syncFallbacks("periodic"))
          expect(stalled.ms).toBeLessThan(BOUND_MS)
          expect(typedFailure(stalled.exit)).not.toBe("hung")
          expect(yield* fake.sent).toEqual([])
          yield* proxy.heal
          const report = yield* coordinator.syncFallbacks("periodic")
          expect(report.delivered).toEqual([intent.intentId])
          expect((yield* fake.sent).map((sent) => sent.message.details.turnIntentId)).toEqual([
            intent.intentId
          ])
        })
      )
  )

  it.live(
    "a transaction its process left idle is ended by the server, its locks released, nothing written",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const url = yield* freshPgUrl
          const context = yield* withPolicy(
            Layer.build(layerTurnIntentStorePg({ url, busyTimeoutMs: BUSY_MS }))
          )
          const store = Context.get(context, TurnIntentStore)
          const sql = Context.get(context, SqlClient.SqlClient)
          const intent = yield* store.ensure(sampleIntent())
          // A writer takes the row's lock, then its process stops answering for 3 s (a frozen process).
          const frozen = yield* Effect.fork(
            Effect.exit(
              Context.get(context, Database).immediate(
                Effect.zipRight(
                  sql`UPDATE workflow_turn_intents SET eligible_at = 'frozen' WHERE intent_id = ${intent.intentId}`,
                  Effect.sleep("3 seconds")
                )
              )
            )
          )
          yield* Effect.sleep("100 millis")
          // Another program's write of the same row waits for the lock only until the server ends the idle session.
          const other = yield* timed(
            Effect.promise(() =>
              pgQuery(url, "UPDATE workflow_turn_intents SET eligible_at = 'other' WHERE intent_id = $1", [
                intent.intentId
              ])
            )
          )
          expect(Exit.isSuccess(other.exit)).toBe(true)
          expect(other.ms).toBeLessThan(IDLE_MS + 1_500)
          const ended = yield* Effect.fromFiber(frozen)
          expect(Exit.isFailure(ended)).toBe(true)
          expect(
            yield* Effect.promise(() => pgQuery(url, "SELECT eligible_at FROM workflow_turn_intents"))
          ).toEqual([{ eligible_at: "other" }])
        })
      )
  )
})
