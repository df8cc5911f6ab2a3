/**
 * Where a PostgreSQL store call's time goes: one statement (`get`, a primary-key lookup) sent
 * along each step of the path from a plain `pg` client to `TurnIntentStore.get`, in one run on
 * one database, so each row's difference to the one before is that step's cost:
 *
 * 1. a plain client, unnamed statement (parsed and planned by the server on every call);
 * 2. a plain client, named prepared statement (parsed and planned once per connection);
 * 3. a pool: check a connection out and back in around the same named statement;
 * 4. @effect/sql-pg's `sql.unsafe` (the layer's path for every statement: span, scope,
 *    statement compile, pool, unnamed statement);
 * 5. `TurnIntentStore.get` (adds input checks and row decoding).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { toPgDialect } from "./pg-dialect.ts"
import { layerTurnIntentStorePg } from "../src/store/pg/stores-pg.ts"
import { TurnIntentStore } from "../src/store/turn-intent-store.ts"
import { nowUs, workload } from "./fixtures.ts"
import { SQL } from "./sql.ts"
import { combineRounds, ratio, type Summary, summarize, table, us } from "./stats.ts"

interface Plan {
  readonly ops: number
  readonly warmup: number
}

const STEPS = [
  "plain client, unnamed statement",
  "plain client, named statement",
  "pool checkout + named statement",
  "@effect/sql-pg `sql.unsafe` (the layer's path)",
  "`TurnIntentStore.get`"
] as const
type Step = (typeof STEPS)[number]

/** Median / p99 of `get` along each step of the path, `rounds` rounds, steps in rotating order. */
export const measureBreakdown = (url: string, plan: Plan, rounds: number): Promise<Map<Step, Summary>> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(layerTurnIntentStorePg({ url }))
        const store = Context.get(context, TurnIntentStore)
        const sql = Context.get(context, SqlClient.SqlClient)
        const items = Array.from({ length: plan.ops + plan.warmup }, (_, i) => workload("breakdown", i))
        for (const item of items) yield* store.ensure(item.input)
        const ids = items.map((item) => item.raw.intentId)
        const text = toPgDialect(SQL.get)
        const client = new pg.Client({ connectionString: url })
        yield* Effect.promise(() => client.connect())
        yield* Effect.addFinalizer(() => Effect.promise(() => client.end()))
        const pool = new pg.Pool({ connectionString: url, max: 10 })
        yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
        const calls: Record<Step, (id: string) => Effect.Effect<unknown, unknown>> = {
          "plain client, unnamed statement": (id) => Effect.promise(() => client.query(text, [id])),
          "plain client, named statement": (id) =>
            Effect.promise(() => client.query({ name: "get", text, values: [id] })),
          "pool checkout + named statement": (id) =>
            Effect.promise(async () => {
              const pooled = await pool.connect()
              try {
                return await pooled.query({ name: "get", text, values: [id] })
              } finally {
                pooled.release()
              }
            }),
          "@effect/sql-pg `sql.unsafe` (the layer's path)": (id) => sql.unsafe(text, [id]),
          "`TurnIntentStore.get`": (id) => store.get(id)
        }
        const samples = new Map<Step, Array<Summary>>(STEPS.map((step) => [step, []]))
        for (let round = 0; round < rounds; round++) {
          for (let k = 0; k < STEPS.length; k++) {
            const step = STEPS[(k + round) % STEPS.length] as Step
            const call = calls[step]
            for (let i = 0; i < plan.warmup; i++) yield* call(ids[i] as string)
            const out = new Float64Array(plan.ops)
            for (let i = 0; i < plan.ops; i++) {
              const start = nowUs()
              yield* call(ids[plan.warmup + i] as string)
              out[i] = nowUs() - start
            }
            samples.get(step)?.push(summarize(out))
          }
        }
        return new Map(STEPS.map((step) => [step, combineRounds(samples.get(step) ?? [])]))
      })
    )
  )

/** The breakdown as a markdown table: each step's median, p99 and its cost over the step before. */
export const breakdownTable = (measured: Map<Step, Summary>): string => {
  const first = measured.get(STEPS[0])?.median ?? Number.NaN
  return table(
    ["path of one `get`", "median / p99 µs", "vs. plain client, unnamed"],
    STEPS.map((step) => {
      const s = measured.get(step)
      return s === undefined
        ? [step, "—", "—"]
        : [step, `${us(s.median)} / ${us(s.p99)}`, ratio(s.median / first)]
    })
  )
}
