/**
 * The two sides the PostgreSQL column compares: the store's SQL on one plain `pg` client, and
 * `layerTurnIntentStorePg` itself, each on a URL of its own schema.
 */
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { toPgDialect } from "./pg-dialect.ts"
import { layerTurnIntentStorePg } from "../src/store/pg/stores-pg.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { LEASE_MS, type Workload } from "./fixtures.ts"
import { SQL } from "./sql.ts"

export const iso = (millis: number) => new Date(millis).toISOString()

export interface Plan {
  readonly ops: number
  readonly warmup: number
}

/**
 * The floor on PostgreSQL: the store's statements in PostgreSQL's dialect on one plain client,
 * sent as the layer sends them: named prepared statements.
 */
export class RawPg {
  constructor(readonly client: pg.Client) {}

  private async rows(op: keyof typeof SQL, values: ReadonlyArray<unknown>): Promise<number> {
    return (
      (await this.client.query({ name: op, text: toPgDialect(SQL[op]), values: [...values] })).rowCount ?? 0
    )
  }

  ensure = (w: Workload) => {
    const at = iso(Date.now())
    const r = w.raw
    return this.rows("ensure", [
      r.intentId,
      r.sourceEventId,
      r.runId,
      r.workflowRef,
      r.targetSessionId,
      r.cause,
      r.nodeId,
      r.attemptId,
      r.factsJson,
      at,
      null
    ])
  }
  get = (intentId: string) => this.rows("get", [intentId])
  list = (session: string, runId: string) => this.rows("list", [session, runId])
  claimForRun = (runId: string, session: string, token: string) => {
    const now = Date.now()
    return this.rows("claimForRun", [token, now + LEASE_MS, runId, session, now, token])
  }
  release = (intentId: string, token: string) => this.rows("release", [intentId, token])
  makeEligible = (intentId: string) => this.rows("makeEligible", [iso(Date.now()), null, intentId])
  /** As the layer does it: the read-only probe, then the claim only when it found something. */
  claimEligibleForSession = async (session: string, token: string) => {
    const now = Date.now()
    if ((await this.rows("probeEligible", [session, now, token])) === 0) return 0
    return this.rows("claimEligibleForSession", [token, now + LEASE_MS, session, now, token])
  }
  resolve = (intentId: string, token: string) => {
    const now = Date.now()
    return this.rows("resolve", [iso(now), "fallback", `message-${intentId}`, intentId, token, now])
  }
}

export const connect = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** A URL whose connections see only schema `name` of the bench database. */
export const schemaUrl = (base: string, name: string) => {
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${name}`)
  return url.toString()
}

export const withPgStore = <A>(
  url: string,
  use: (store: TurnIntentStoreService) => Effect.Effect<A, unknown>
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(layerTurnIntentStorePg({ url })), (context) =>
        use(Context.get(context, TurnIntentStore))
      )
    )
  )
