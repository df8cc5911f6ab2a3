/**
 * Which PostgreSQL failures a retry can fix, for the `Database` on PostgreSQL (`database-pg.ts`):
 *
 * - a serialization failure or deadlock (SQLSTATE 40001, 40P01): the transaction was rolled
 *   back, so running it again is the whole remedy;
 * - a lost connection (the server ended the session, the socket broke, the server cannot be
 *   reached): a transaction that had not reached COMMIT was rolled back with it, so it may run
 *   again on another connection;
 * - a statement that never left this process (no connection could be had, or the pooled one was
 *   already broken): safe to send again whatever it does.
 *
 * A single statement whose connection broke while it ran is not retried: it may have committed.
 */

const SERIALIZATION = new Set(["40001", "40P01"])
/**
 * The server ended or refused the session: admin/crash shutdown, cannot connect now, or the
 * session sat idle in its transaction past `idle_in_transaction_session_timeout` (rolled back).
 */
const SESSION_ENDED = new Set(["57P01", "57P02", "57P03", "25P03"])
/** Socket-level errors of Node (`code`). */
const SOCKET = new Set(["EPIPE", "ECONNRESET", "ECONNREFUSED", "ENOENT", "ETIMEDOUT", "EHOSTUNREACH"])
/** `pg`'s own errors for a connection that is gone (they carry no code). */
const LOST =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|Connection timed out/i
/** Failures before anything was written to the server. */
const UNSENT = /not queryable|Failed to acquire connection|timeout exceeded when trying to connect/i

/** `error` and its causes (SqlError → pg error), nearest first. */
const chain = (error: unknown): ReadonlyArray<object> => {
  const found: Array<object> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    found.push(current)
    current = "cause" in current ? current.cause : undefined
  }
  return found
}

const codeOf = (error: object): string | undefined =>
  "code" in error && typeof error.code === "string" ? error.code : undefined

const messageOf = (error: object): string =>
  "message" in error && typeof error.message === "string" ? error.message : ""

/** The SQLSTATE in `error`'s causes, if the server sent one. */
export const sqlState = (error: unknown): string | undefined =>
  chain(error)
    .map(codeOf)
    .find((code) => code !== undefined && code.length === 5 && /^[0-9A-Z]+$/.test(code))

export const isSerializationFailure = (error: unknown): boolean => SERIALIZATION.has(sqlState(error) ?? "")

export const isConnectionFailure = (error: unknown): boolean => {
  const state = sqlState(error)
  if (state !== undefined) return state.startsWith("08") || SESSION_ENDED.has(state)
  return chain(error).some((e) => SOCKET.has(codeOf(e) ?? "") || LOST.test(messageOf(e)))
}

/** The statement cannot have reached the server. */
export const isUnsent = (error: unknown): boolean =>
  chain(error).some(
    (e) => UNSENT.test(messageOf(e)) || ["ECONNREFUSED", "ENOENT", "EPIPE"].includes(codeOf(e) ?? "")
  )
