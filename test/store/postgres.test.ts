/**
 * What only the PostgreSQL backend has to prove (the shared contract suites run on it too, see
 * vitest.config.ts): opening (unreachable server, concurrent first opens, foreign schema
 * version), the rules the database itself enforces, and claims that stay exclusive when many
 * connections race on one server.
 */
import { createServer } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import pg from "pg"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { layerStoresPg } from "../../src/app/layers.ts"
import { NOTIFICATION_SCHEMA, NotificationStore } from "../../src/store/notification-store.ts"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import { layerNotificationStorePg, layerRunStorePg } from "../../src/store/pg/database-pg.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { newRun } from "../notifications/kit.ts"
import { freshPgUrl, pgQuery } from "../support/backend.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { openStoreAt } from "../support/store.ts"

/** A loopback port with nothing listening on it. */
const closedPort = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const server = createServer()
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        server.close(() => resolve(port))
      })
    })
)

/** Run raw SQL as some other program would: "accepted", or the server's error message. */
const rejects = (url: string, text: string) =>
  Effect.promise(() =>
    pgQuery(url, text).then(
      () => "accepted",
      (error: unknown) => (error instanceof Error ? error.message : String(error))
    )
  )

describe("opening a PostgreSQL store", () => {
  it.scoped("a refused connection is a typed StoreFailure naming the server, password hidden", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const url = `postgresql://pwt:s3cret@127.0.0.1:${port}/pw`
      const exit = yield* Effect.exit(Layer.build(layerStoresPg({ url, connectTimeoutMs: 2_000 })))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isSuccess(exit)) return
      const text = JSON.stringify(exit.cause.toJSON())
      expect(text).toContain("StoreFailure")
      expect(text).toContain("cannot connect to PostgreSQL at postgresql://pwt:***@127.0.0.1")
      expect(text).toContain("ECONNREFUSED")
      expect(text).not.toContain("s3cret")
      // Nothing else broke: a reachable database opens afterwards.
      const store = yield* openStoreAt(yield* freshPgUrl)
      expect((yield* store.ensure(sampleIntent())).resolvedAt).toBeNull()
    })
  )

  it.scoped("three pools in one process opening a new schema at once all get it, created once", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const [a, b, c] = yield* Effect.all([openStoreAt(url), openStoreAt(url), openStoreAt(url)], {
        concurrency: "unbounded"
      })
      const intent = yield* a.ensure(sampleIntent())
      expect(Option.getOrNull(yield* b.get(intent.intentId))).toEqual(intent)
      expect(yield* c.list({ limit: 10 })).toEqual([intent])
      const applied = yield* Effect.promise(() =>
        pgQuery(url, "SELECT name FROM effect_sql_migrations ORDER BY migration_id")
      )
      expect(applied).toEqual([
        { name: "controller_store_v1" },
        { name: "run_end_facts" },
        { name: "run_snapshots" },
        { name: "step_reminders" },
        { name: "run_event_adopted" },
        { name: "waits" },
        { name: "step_runner" }
      ])
    })
  )

  it.scoped("a database of another schema version is refused with IncompatibleStore, unchanged", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      yield* openStoreAt(url)
      yield* Effect.promise(() =>
        pgQuery(url, "UPDATE pi_workflows_metadata SET value = 'other.v9' WHERE key = 'schema'")
      )
      const exit = yield* Effect.exit(Layer.build(DatabasePg.layer({ url })))
      expect(exit).toEqual(
        Exit.fail(expect.objectContaining({ _tag: "IncompatibleStore", found: "other.v9" }))
      )
      expect(yield* Effect.promise(() => pgQuery(url, "SELECT value FROM pi_workflows_metadata"))).toEqual([
        { value: "other.v9" }
      ])
    })
  )
})

describe("schema versions on PostgreSQL", () => {
  it.scoped("a database of a newer release is refused by every open, typed, and nothing changes", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      yield* Effect.scoped(Effect.flatMap(openStoreAt(url), (store) => store.ensure(sampleIntent())))
      yield* Effect.promise(() =>
        pgQuery(
          url,
          "INSERT INTO effect_sql_migrations (migration_id, name) VALUES (2, 'from_a_later_release')"
        )
      )
      const state = Effect.promise(() =>
        Promise.all([
          pgQuery(url, "SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id"),
          pgQuery(url, "SELECT * FROM workflow_turn_intents ORDER BY intent_id"),
          pgQuery(
            url,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
          )
        ])
      )
      const before = yield* state
      for (const readonly of [false, true]) {
        const error = yield* Effect.flip(Layer.build(DatabasePg.layer({ url, readonly })))
        expect(error._tag).toBe("StoreFailure")
        expect(error.message).toContain("newer release")
        expect(error.message).toContain("2_from_a_later_release")
      }
      expect(yield* state).toEqual(before)
    })
  )

  it.scoped("a read-only open of a database at this version opens; one missing a version is refused", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      yield* Effect.scoped(openStoreAt(url))
      yield* Effect.scoped(Layer.build(DatabasePg.layer({ url, readonly: true })))
      yield* Effect.promise(() => pgQuery(url, "DELETE FROM effect_sql_migrations"))
      const error = yield* Effect.flip(Layer.build(DatabasePg.layer({ url, readonly: true })))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain(
        "older schema version (missing migration(s) 1_controller_store_v1, 3_run_end_facts, 4_run_snapshots, 5_step_reminders, 6_run_event_adopted, 7_waits, 8_step_runner)"
      )
    })
  )
})

describe("rules the PostgreSQL database enforces, whatever code writes", () => {
  it.scoped("resolved intents and intent identity are immutable; closed value sets are checked", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const store = yield* openStoreAt(url)
      const pending = yield* store.ensure(sampleIntent({ sourceEventId: "e-1" }))
      const done = yield* store.ensure(sampleIntent({ sourceEventId: "e-2" }))
      yield* store.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: "t", leaseMs: 60_000 })
      const claimed = yield* store.claimForRun({
        runId: "run-1",
        targetSessionId: "session-1",
        token: "u",
        leaseMs: 60_000
      })
      const id = Option.getOrThrow(claimed).intentId
      yield* store.resolve({ intentId: id, token: "u", resolution: "fallback", messageId: "m-1" })
      const other = id === done.intentId ? pending.intentId : done.intentId
      expect(
        yield* rejects(url, `UPDATE workflow_turn_intents SET eligible_at = 'x' WHERE intent_id = '${id}'`)
      ).toContain("resolved turn intents are immutable")
      expect(
        yield* rejects(url, `UPDATE workflow_turn_intents SET run_id = 'run-9' WHERE intent_id = '${other}'`)
      ).toContain("turn intent identity is immutable")
      expect(
        yield* rejects(
          url,
          `UPDATE workflow_turn_intents SET resolution = 'maybe' WHERE intent_id = '${other}'`
        )
      ).toContain("check constraint")
      expect(
        yield* rejects(
          url,
          `UPDATE workflow_turn_intents SET resolved_at = 'now' WHERE intent_id = '${other}'` // half resolved
        )
      ).toContain("check constraint")
      expect(yield* rejects(url, "UPDATE workflow_run_launches SET kind = 'start'")).toBe("accepted") // no rows
    })
  )
})

describe("network faults", () => {
  it.scoped(
    "dropped connections: calls fail as StoreFailure until the pool has reconnected, never a defect",
    () =>
      Effect.gen(function* () {
        const url = yield* freshPgUrl
        const store = yield* openStoreAt(url)
        const intent = yield* store.ensure(sampleIntent())
        // The server ends every other session of this database, as a restart or a proxy would.
        yield* Effect.promise(() =>
          pgQuery(
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
          )
        )
        // Pooled connections learn of their end when used: each such call fails, typed, and
        // drops its connection; once the pool has shed them all (at most its size) calls work.
        const failures: Array<string> = []
        let listed: ReadonlyArray<unknown> = []
        for (let call = 0; call <= 10 && listed.length === 0; call++) {
          const result = yield* Effect.either(store.list({ limit: 10 }))
          if (result._tag === "Left") failures.push(result.left._tag)
          else listed = result.right
        }
        expect(listed).toEqual([intent])
        expect(failures.every((tag) => tag === "StoreFailure")).toBe(true)
      })
  )
})

describe("a slow server", () => {
  it.live("a call stuck behind another client's lock is bounded by the caller's timeout, then works", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const url = yield* freshPgUrl
        const store = yield* openStoreAt(url)
        const input = sampleIntent()
        // Another client inserts the same intent and holds its transaction open: the store's
        // INSERT waits on the key, like a statement to an overloaded or distant server.
        const other = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new pg.Client({ connectionString: url })
            await client.connect()
            return client
          }),
          (client) => Effect.promise(() => client.end())
        )
        const intent = yield* store.ensure(input)
        yield* Effect.promise(() => other.query("BEGIN"))
        yield* Effect.promise(() =>
          other.query("UPDATE workflow_turn_intents SET eligible_at = 'x' WHERE intent_id = $1", [
            intent.intentId
          ])
        )
        // The abort path bounds its write the same way (interruptions.ts: timeoutFail).
        const bounded = yield* store
          .makeEligible({ intentId: intent.intentId })
          .pipe(Effect.timeout("300 millis"), Effect.either)
        expect(bounded._tag === "Left" && bounded.left._tag).toBe("TimeoutException")
        yield* Effect.promise(() => other.query("ROLLBACK"))
        // The interrupted statement was cancelled on the server: nothing it wanted was written.
        expect(Option.getOrThrow(yield* store.get(intent.intentId)).eligibleAt).toBeNull()
        expect((yield* store.makeEligible({ intentId: intent.intentId })).eligibleAt).not.toBeNull()
      })
    )
  )
})

describe("runs under real concurrency (SERIALIZABLE transactions, retried)", () => {
  it.scoped("racing activations of one queued run: exactly one claim wins, the rest are refused", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const runs = Context.get(yield* Layer.build(layerRunStorePg({ url })), RunStore)
      yield* runs.reserve(newRun("r1"))
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) => Effect.either(runs.claim({ runId: "r1", token: `t-${i}`, leaseMs: 60_000, mode: "activate" })),
        { concurrency: "unbounded" }
      )
      const won = outcomes.flatMap((o) => (o._tag === "Right" ? [o.right.claimToken] : []))
      const refused = outcomes.flatMap((o) => (o._tag === "Left" ? [o.left._tag] : []))
      expect(won).toHaveLength(1)
      expect(new Set(refused)).toEqual(new Set(["ClaimRefused"]))
      expect(Option.getOrThrow(yield* runs.get("r1")).claimToken).toBe(won[0])
    })
  )
})

describe("claims under real concurrency (many connections, one server)", () => {
  it.scoped("racing fallback claimants take every eligible intent exactly once", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const store = yield* openStoreAt(url)
      const intents = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => store.ensure(sampleIntent({ sourceEventId: `e-${i}`, eligible: true }))
      )
      const claims = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) =>
          store.claimEligibleForSession({
            targetSessionId: "session-1",
            token: `t-${i}`,
            leaseMs: 60_000,
            limit: 10
          }),
        { concurrency: "unbounded" }
      )
      const taken = claims.flat().map((intent) => intent.intentId)
      expect(taken.length).toBe(new Set(taken).size) // no intent claimed twice
      expect(new Set(taken)).toEqual(new Set(intents.map((intent) => intent.intentId)))
    })
  )

  it.scoped("racing deliverers take every pending notification exactly once", () =>
    Effect.gen(function* () {
      const url = yield* freshPgUrl
      const store = Context.get(yield* Layer.build(layerNotificationStorePg({ url })), NotificationStore)
      for (let i = 0; i < 100; i++) {
        yield* store.insert({
          notificationId: `n-${i}`,
          runId: "r1",
          targetSessionId: "s1",
          payload: {
            schema: NOTIFICATION_SCHEMA,
            kind: "progress",
            workflowName: "w",
            text: `m${i}`,
            nodeId: null,
            attemptId: null
          }
        })
      }
      const taken = yield* Effect.forEach(
        Array.from({ length: 20 }, () => 0),
        () => store.takePending({ targetSessionId: "s1", limit: 10 }),
        { concurrency: "unbounded" }
      )
      const ids = taken.flat().map((n) => n.notificationId)
      expect(ids.length).toBe(new Set(ids).size)
      expect(ids.length).toBe(100)
    })
  )
})
