/**
 * The server- and client-side bounds every PostgreSQL session of the stores starts with, from
 * `TimingPolicy` (`src/domain/timing-policy.ts`) and the connection's lock budget:
 *
 * - `lock_timeout` = the lock budget: a lock wait fails as a lock failure (SQLSTATE 55P03);
 * - `statement_timeout`: a statement the server runs longer is cancelled (57014);
 * - `idle_in_transaction_session_timeout`: a session idle inside a transaction (its process
 *   stopped or frozen) is ended by the server, which rolls it back and releases its locks (25P03);
 * - the client's `query_timeout`, a little past the statement timeout: over a stalled connection
 *   no answer (not even the server's cancellation) arrives, so the client stops waiting itself.
 *
 * All four travel in the connection URL (`sessionUrl`): the server's as `-c` startup options,
 * `query_timeout` as a parameter `pg` reads from the URL for each client of the pool.
 */
import { Duration, Effect } from "effect"
import { pgClientMargin, pgDefaultTimeout, TimingPolicy, toMillis } from "../../domain/timing-policy.ts"
import { StoreFailure } from "../store-errors.ts"

export interface SessionTimeouts {
  readonly lockMs: number
  readonly statementMs: number
  readonly idleInTransactionMs: number
  readonly clientMs: number
}

/** The policy's timeouts for a connection with lock budget `lockBudgetMs`; a statement bound not above it is refused. */
export const sessionTimeouts = (lockBudgetMs: number): Effect.Effect<SessionTimeouts, StoreFailure> =>
  Effect.gen(function* () {
    const policy = yield* TimingPolicy
    // 0 would mean "no limit" to PostgreSQL: a zero budget is the shortest wait instead.
    const lockMs = Math.max(1, lockBudgetMs)
    const derived = pgDefaultTimeout(lockMs)
    const statementMs =
      policy.pgStatementTimeout === null ? derived : Math.max(1, toMillis(policy.pgStatementTimeout))
    const idleInTransactionMs =
      policy.pgIdleInTransactionTimeout === null
        ? derived
        : Math.max(1, toMillis(policy.pgIdleInTransactionTimeout))
    if (statementMs <= lockMs) {
      return yield* new StoreFailure({
        operation: "open",
        message:
          `TimingPolicy.pgStatementTimeout (${Duration.format(Duration.millis(statementMs))}) must exceed ` +
          `the lock budget busyTimeoutMs (${lockMs} ms), or lock waits would end as statement timeouts`
      })
    }
    return { lockMs, statementMs, idleInTransactionMs, clientMs: statementMs + pgClientMargin(statementMs) }
  })

/** `url` with `option` (e.g. `-c name=value`) added to its connection `options`. */
export const withConnectionOption = (url: string, option: string): string => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", options === null || options === "" ? option : `${options} ${option}`)
  return parsed.toString()
}

/** `url` with every bound of `timeouts` set for each session the client opens (throws on a bad URL). */
export const sessionUrl = (url: string, timeouts: SessionTimeouts): string => {
  const parsed = new URL(
    withConnectionOption(
      url,
      [
        `-c lock_timeout=${timeouts.lockMs}`,
        `-c statement_timeout=${timeouts.statementMs}`,
        `-c idle_in_transaction_session_timeout=${timeouts.idleInTransactionMs}`
      ].join(" ")
    )
  )
  parsed.searchParams.set("query_timeout", String(timeouts.clientMs))
  return parsed.toString()
}
