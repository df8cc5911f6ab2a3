/**
 * The store's statements share the SqliteClient's one connection with `immediate`
 * transactions. These tests pin what must never change: a store call from a fiber outside an open
 * transaction waits for it and is not rolled back with it; a call inside joins it; the
 * sync-pass probe takes no write lock; stored rows are still decoded strictly.
 */
import { SqlClient, Statement } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option } from "effect"
import { Database } from "../../src/store/database.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layer as storeLayer, layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { rawDb, snapshotIntents } from "../support/store.ts"
import { tempDbPath } from "../support/temp-db.ts"

const open = (options: { readonly busyTimeoutMs?: number } = {}) =>
  Effect.gen(function* () {
    const path = yield* tempDbPath
    const context = yield* Layer.build(layerSqlite({ filename: path, ...options }))
    return {
      path,
      store: Context.get(context, TurnIntentStore),
      database: Context.get(context, Database)
    }
  })

const runIds = (path: string) =>
  Effect.map(snapshotIntents(path), (rows) =>
    rows.map((row) => (typeof row === "object" && row !== null && "run_id" in row ? row.run_id : null)).sort()
  )

/** Give every other fiber many chances to run (no clock involved). */
const letOthersRun = Effect.repeatN(Effect.yieldNow(), 50)

class Boom {
  readonly _tag = "Boom"
}

describe("store calls and open transactions on the same connection", () => {
  it.scoped("a call from another fiber waits for an open transaction and is not rolled back with it", () =>
    Effect.gen(function* () {
      const { path, store, database } = yield* open()
      const opened = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const transaction = yield* Effect.fork(
        database.immediate(
          Effect.gen(function* () {
            yield* store.ensure(sampleIntent({ runId: "inside" }))
            yield* Deferred.succeed(opened, undefined)
            yield* Deferred.await(finish)
            return yield* Effect.fail(new Boom())
          })
        )
      )
      yield* Deferred.await(opened)
      const outside = yield* Effect.fork(store.ensure(sampleIntent({ runId: "outside" })))
      yield* letOthersRun
      // Still waiting: it neither ran inside the transaction nor around it.
      expect(Option.isNone(yield* Fiber.poll(outside))).toBe(true)
      expect(yield* runIds(path)).toEqual([])
      yield* Deferred.succeed(finish, undefined)
      expect((yield* Effect.flip(Fiber.join(transaction)))._tag).toBe("Boom")
      expect((yield* Fiber.join(outside)).runId).toBe("outside")
      // The transaction's own write is gone, the other fiber's write stays.
      expect(yield* runIds(path)).toEqual(["outside"])
    })
  )

  it.scoped("a read from another fiber sees the transaction's writes only after the commit", () =>
    Effect.gen(function* () {
      const { store, database } = yield* open()
      const opened = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const transaction = yield* Effect.fork(
        database.immediate(
          Effect.gen(function* () {
            const intent = yield* store.ensure(sampleIntent())
            yield* Deferred.succeed(opened, undefined)
            yield* Deferred.await(finish)
            return intent
          })
        )
      )
      yield* Deferred.await(opened)
      const reader = yield* Effect.fork(store.list({ limit: 10 }))
      yield* letOthersRun
      expect(Option.isNone(yield* Fiber.poll(reader))).toBe(true)
      yield* Deferred.succeed(finish, undefined)
      const created = yield* Fiber.join(transaction)
      expect((yield* Fiber.join(reader)).map((intent) => intent.intentId)).toEqual([created.intentId])
    })
  )

  it.scoped("calls made inside the transaction join it: they see its writes and roll back with it", () =>
    Effect.gen(function* () {
      const { path, store, database } = yield* open()
      const failed = yield* Effect.flip(
        database.immediate(
          Effect.gen(function* () {
            const intent = yield* store.ensure(sampleIntent({ eligible: true }))
            // A child fiber of the transaction is part of it too.
            const seen = yield* Fiber.join(yield* Effect.fork(store.get(intent.intentId)))
            expect(Option.isSome(seen)).toBe(true)
            const claimed = yield* store.claimEligibleForSession({
              targetSessionId: intent.targetSessionId,
              token: "t",
              leaseMs: 1_000,
              limit: 10
            })
            expect(claimed.map((c) => c.intentId)).toEqual([intent.intentId])
            return yield* Effect.fail(new Boom())
          })
        )
      )
      expect(failed._tag).toBe("Boom")
      expect(yield* snapshotIntents(path)).toEqual([])
      expect(yield* store.list({ limit: 10 })).toEqual([])
    })
  )

  it.scoped("a committed transaction keeps every store write made inside it", () =>
    Effect.gen(function* () {
      const { path, store, database } = yield* open()
      yield* database.immediate(
        Effect.all([store.ensure(sampleIntent({ runId: "a" })), store.ensure(sampleIntent({ runId: "b" }))])
      )
      expect(yield* runIds(path)).toEqual(["a", "b"])
    })
  )

  it.scoped("a Database without the fast path (a wrapper) routes the same statements through SqlClient", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const base = yield* Layer.build(layerSqlite({ filename: path }))
      const database = Context.get(base, Database)
      const wrapped = Layer.succeed(Database, { filename: database.filename, immediate: database.immediate })
      const context = yield* Layer.build(
        storeLayer.pipe(
          Layer.provide(
            Layer.merge(wrapped, Layer.succeed(SqlClient.SqlClient, Context.get(base, SqlClient.SqlClient)))
          )
        )
      )
      const store = Context.get(context, TurnIntentStore)
      const sent: Array<string> = []
      const capture = Statement.withTransformer((statement) =>
        Effect.sync(() => {
          sent.push(statement.compile()[0])
          return statement
        })
      )
      const intent = yield* capture(store.ensure(sampleIntent()))
      expect(sent).toHaveLength(1)
      expect(sent[0]).toMatch(/^INSERT INTO workflow_turn_intents/)
      expect(yield* store.get(intent.intentId)).toEqual(Option.some(intent))
    })
  )
})

describe("the sync-pass probe", () => {
  it.scoped(
    "a pass with nothing eligible takes no write lock: it answers while another connection writes",
    () =>
      Effect.gen(function* () {
        const { path, store } = yield* open({ busyTimeoutMs: 50 })
        const pending = yield* store.ensure(sampleIntent())
        const holder = yield* rawDb(path)
        holder.exec("BEGIN IMMEDIATE")
        const pass = { targetSessionId: pending.targetSessionId, token: "sync", leaseMs: 1_000, limit: 10 }
        expect(yield* store.claimEligibleForSession(pass)).toEqual([])
        holder.exec("ROLLBACK")
        // With something eligible the claim is a write again, and the lock matters.
        yield* store.makeEligible({ intentId: pending.intentId })
        holder.exec("BEGIN IMMEDIATE")
        const blocked = yield* Effect.flip(store.claimEligibleForSession(pass))
        holder.exec("ROLLBACK")
        expect(blocked._tag).toBe("StoreFailure")
        expect((yield* store.claimEligibleForSession(pass)).map((c) => c.intentId)).toEqual([
          pending.intentId
        ])
      })
  )
})

describe("stored rows are decoded strictly", () => {
  const corrupt = (statements: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const { path, store, database } = yield* open()
      const intent = yield* store.ensure(sampleIntent())
      const db = yield* rawDb(path)
      for (const statement of statements) db.exec(statement)
      return { store, intent, database }
    })

  it.scoped("facts with an unknown field are a StoreFailure that names it", () =>
    Effect.gen(function* () {
      const { store, intent } = yield* corrupt([
        `UPDATE workflow_turn_intents SET fallback_facts_json = json_set(fallback_facts_json, '$.env', 'x')`
      ])
      const error = yield* Effect.flip(store.get(intent.intentId))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain("unknown facts field env")
      expect((yield* Effect.flip(store.list({ limit: 10 })))._tag).toBe("StoreFailure")
    })
  )

  it.scoped("facts of the wrong type or not JSON are a StoreFailure", () =>
    Effect.gen(function* () {
      const wrongType = yield* corrupt([
        `UPDATE workflow_turn_intents SET fallback_facts_json = json_set(fallback_facts_json, '$.handoff', 'yes')`
      ])
      const typed = yield* Effect.flip(wrongType.store.get(wrongType.intent.intentId))
      expect(typed._tag).toBe("StoreFailure")
      expect(typed.message).toContain("handoff")
      const notJson = yield* corrupt([`UPDATE workflow_turn_intents SET fallback_facts_json = '{not json'`])
      expect((yield* Effect.flip(notJson.store.get(notJson.intent.intentId)))._tag).toBe("StoreFailure")
    })
  )

  it.scoped("a table with a column this version does not know is a StoreFailure", () =>
    Effect.gen(function* () {
      const { store, intent } = yield* corrupt(["ALTER TABLE workflow_turn_intents ADD COLUMN surprise TEXT"])
      const error = yield* Effect.flip(store.get(intent.intentId))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain("surprise")
    })
  )

  it.scoped("a column added after the statement was prepared is a StoreFailure that names it", () =>
    Effect.gen(function* () {
      const { path, store } = yield* open()
      const intent = yield* store.ensure(sampleIntent())
      // Prepared and used with the table's shape of then; SQLite re-prepares it after the change.
      expect(Option.isSome(yield* store.get(intent.intentId))).toBe(true)
      const db = yield* rawDb(path)
      db.exec("ALTER TABLE workflow_turn_intents ADD COLUMN surprise TEXT")
      const error = yield* Effect.flip(store.get(intent.intentId))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain("surprise")
    })
  )

  it.scoped("inside a transaction (the SqlClient's rows) bad stored data is the same StoreFailure", () =>
    Effect.gen(function* () {
      const { store, intent, database } = yield* corrupt([
        `UPDATE workflow_turn_intents SET fallback_facts_json = json_set(fallback_facts_json, '$.env', 'x')`
      ])
      const error = yield* Effect.flip(database.immediate(store.get(intent.intentId)))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain("unknown facts field env")
    })
  )
})

describe("row limits are part of the statement text", () => {
  // A bound `LIMIT ?` is re-planned on every call (~13 µs on SQLite 3.53, docs/bench.md); the
  // store writes the validated limit into the text and prepares each text once.
  it.scoped("list and claimEligibleForSession send the limit as a constant, never as a parameter", () =>
    Effect.gen(function* () {
      const { store, database } = yield* open()
      const intent = yield* store.ensure(sampleIntent({ eligible: true }))
      const sent: Array<readonly [string, ReadonlyArray<unknown>]> = []
      const capture = Statement.withTransformer((statement) =>
        Effect.sync(() => {
          sent.push(statement.compile())
          return statement
        })
      )
      // Inside a transaction the store's statements go through the SqlClient, where they are seen.
      yield* capture(
        database.immediate(
          Effect.gen(function* () {
            yield* store.list({ targetSessionId: intent.targetSessionId, state: "pending", limit: 7 })
            yield* store.claimEligibleForSession({
              targetSessionId: intent.targetSessionId,
              token: "t",
              leaseMs: 1_000,
              limit: 3
            })
          })
        )
      )
      const list = sent.find(([text]) => text.startsWith("SELECT * FROM workflow_turn_intents WHERE ("))
      const claim = sent.find(([text]) => text.startsWith("UPDATE workflow_turn_intents"))
      expect(list?.[0]).toMatch(/LIMIT 7$/)
      expect(list?.[1]).toEqual([intent.targetSessionId])
      expect(claim?.[0]).toMatch(/LIMIT 3\)\s+RETURNING \*$/)
      expect(claim?.[1]).not.toContain(3)
    })
  )
})
