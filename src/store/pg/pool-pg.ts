/**
 * The connection pool under the PostgreSQL `Database`, and its statement fast path.
 *
 * The pool is ours (`pg.Pool`), shared with @effect/sql-pg (`PgClient.fromPool`), which runs
 * transactions and the migrator. A fixed statement outside a transaction skips @effect/sql's
 * per-query machinery (span, scope, statement compile: ~30–40 µs a call, measured in
 * `npm run bench -- --only=postgres`) and goes to a pooled connection as a named prepared
 * statement, so the server parses and plans it once per connection instead of on every call.
 * Semantics are those of `sql.unsafe(text, params)`: the same connection pool, errors as
 * `SqlError`, and an interrupted call cancels its statement (best effort) like @effect/sql-pg.
 */
import * as SqlError from "@effect/sql/SqlError"
import { Duration, Effect, type Scope } from "effect"
import pg from "pg"
import { isConnectionFailure } from "./pg-failures.ts"

export interface PoolOptions {
  readonly url: string
  readonly types: pg.CustomTypesConfig
  readonly maxConnections: number
  readonly connectTimeoutMs: number
  /**
   * How long a query waits for the server's answer before failing (pg's `query_timeout`): the
   * bound on a connection that stalled, where the server's own timeouts cannot reach the client.
   */
  readonly queryTimeoutMs: number
  readonly applicationName: string
}

/** A pool whose server answered once within the connect timeout; ended with the scope. */
export const makePool = (options: PoolOptions): Effect.Effect<pg.Pool, SqlError.SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new pg.Pool({
        connectionString: options.url,
        types: options.types,
        max: options.maxConnections,
        connectionTimeoutMillis: options.connectTimeoutMs,
        query_timeout: options.queryTimeoutMs,
        application_name: options.applicationName
      })
      // An idle connection the server drops emits here; the pool replaces it. Never a crash.
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1_000))
  ).pipe(
    Effect.tap((pool) =>
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(options.connectTimeoutMs),
          onTimeout: () =>
            new SqlError.SqlError({
              cause: new Error("Connection timed out"),
              message: "PgClient: Connection timed out"
            })
        })
      )
    )
  )

/** Ask the server to cancel what `client` runs (best effort: the answer is not awaited long). */
const cancel = (pool: pg.Pool, client: pg.PoolClient) =>
  Effect.async<void>((resume) => {
    const pid = "processID" in client ? client.processID : undefined
    if (typeof pid !== "number" || pool.ending) return resume(Effect.void)
    pool.query("SELECT pg_cancel_backend($1)", [pid], () => resume(Effect.void))
  }).pipe(Effect.timeoutOption(5_000), Effect.asVoid)

/**
 * Run prepared statement `name` (`text`) with `params` on a pooled connection; the result rows.
 * A connection that fails under the call is handed back as broken, so the pool drops it.
 */
export const runPrepared = (
  pool: pg.Pool,
  name: string,
  text: string,
  params: ReadonlyArray<unknown>
): Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError> =>
  Effect.async<ReadonlyArray<unknown>, SqlError.SqlError>((resume) => {
    let client: pg.PoolClient | undefined
    let done = false
    const finish = (exit: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>, broken?: Error) => {
      if (done) return
      done = true
      client?.off("error", onError)
      client?.release(broken)
      resume(exit)
    }
    const onError = (cause: Error) =>
      finish(Effect.fail(new SqlError.SqlError({ cause, message: "Connection error" })), cause)
    pool.connect((cause, acquired) => {
      if (acquired === undefined || cause instanceof Error) {
        acquired?.release()
        return finish(Effect.fail(new SqlError.SqlError({ cause, message: "Failed to acquire connection" })))
      }
      if (done) return acquired.release()
      client = acquired
      acquired.once("error", onError)
      acquired.query({ name, text, values: [...params] }, (error: Error | null, result: pg.QueryResult) => {
        if (error !== null) {
          const failure = Effect.fail(
            new SqlError.SqlError({ cause: error, message: "Failed to execute statement" })
          )
          // A broken connection goes back as broken, so the pool never hands it out again.
          finish(failure, isConnectionFailure(error) ? error : undefined)
        } else finish(Effect.succeed(result.rows))
      })
    })
    // Interrupted: cancel the statement, then hand the connection back (its queue runs on).
    return Effect.suspend(() => {
      const running = client
      if (done || running === undefined) {
        done = true
        return Effect.void
      }
      return Effect.ensuring(
        cancel(pool, running),
        Effect.sync(() => {
          if (done) return
          done = true
          running.off("error", onError)
          running.release()
        })
      )
    })
  })
