/**
 * Which PostgreSQL failures a transaction retry can fix, for the `Database` on PostgreSQL
 * (`database-pg.ts`), from the codes the failure carries (`../failure-reason.ts`):
 *
 * - a serialization failure or deadlock (SQLSTATE 40001, 40P01): the transaction was rolled
 *   back, so running it again is the whole remedy;
 * - a lost connection (the server ended the session, the socket broke, the server cannot be
 *   reached): a transaction that had not reached COMMIT was rolled back with it, so it may run
 *   again on another connection.
 *
 * A transaction whose connection broke during COMMIT is not retried: it may have committed.
 */
import { causeChain, reasonOf } from "../failure-reason.ts"

const SERIALIZATION = new Set(["40001", "40P01"])
/**
 * The server ended or refused the session: admin/crash shutdown, cannot connect now, or the
 * session sat idle in its transaction past `idle_in_transaction_session_timeout` (rolled back).
 */
const SESSION_ENDED = new Set(["57P01", "57P02", "57P03", "25P03"])

const SQLSTATE = /^[0-9A-Z]{5}$/
/** Node socket codes of SQLSTATE's shape, never sent by a server. */
const NOT_SQLSTATE = new Set(["EPIPE"])

/** The SQLSTATE in `error`'s causes, if the server sent one. */
export const sqlState = (error: unknown): string | undefined => {
  for (const link of causeChain(error)) {
    const code = "code" in link && typeof link.code === "string" ? link.code : undefined
    if (code !== undefined && SQLSTATE.test(code) && !NOT_SQLSTATE.has(code)) return code
  }
  return undefined
}

export const isSerializationFailure = (error: unknown): boolean => SERIALIZATION.has(sqlState(error) ?? "")

/** The session is gone: a server code that says so, or (without one) a socket or `pg` connection error. */
export const isConnectionFailure = (error: unknown): boolean => {
  const state = sqlState(error)
  if (state !== undefined) return state.startsWith("08") || SESSION_ENDED.has(state)
  return reasonOf(error) === "Unavailable"
}

/** Socket codes of a connection that was never made or written to. */
const UNSENT_CODES = new Set(["ECONNREFUSED", "ENOENT", "EPIPE"])
/**
 * The fixed texts of @effect/sql-pg and `pg` for a statement that was never handed to a live
 * connection: no connection could be had, or the pooled one was already known to be broken.
 */
const UNSENT_TEXTS = new Set([
  "Failed to acquire connection",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  "timeout exceeded when trying to connect"
])

/**
 * The statement did not apply, so sending it again cannot apply it twice: it never reached the
 * server, or the server ended the session (57P0x), which rolls back what the session ran.
 */
export const isUnsent = (error: unknown): boolean =>
  ["57P01", "57P02", "57P03"].includes(sqlState(error) ?? "") ||
  causeChain(error).some(
    (link) =>
      ("code" in link && typeof link.code === "string" && UNSENT_CODES.has(link.code)) ||
      ("message" in link && typeof link.message === "string" && UNSENT_TEXTS.has(link.message))
  )
