/**
 * Why a store call failed, as data: `StoreFailure.reason` (store-errors.ts). Decided from what
 * the drivers report as codes, on the error and its causes (SqlError → driver error → …):
 * better-sqlite3's `SqliteError.code`, PostgreSQL's SQLSTATE, Node's socket `code`. Callers
 * (the engine's lock retries, the CLI's "busy" answer) read the reason, never the message.
 *
 * One exception: `pg`'s own client-side errors (a connection that ended, a read timeout) carry
 * no code at all; they are recognised here by the library's fixed texts, compared whole.
 */
import { ParseResult, Schema } from "effect"

export const StoreFailureReason = Schema.Literal(
  /** Another connection held a lock past the lock budget: a later attempt may succeed. */
  "Lock",
  /** PostgreSQL aborted a transaction for a conflict (serialization failure, deadlock) past its retries. */
  "Conflict",
  /** The database (file, connection or transaction) accepts no writes. */
  "ReadOnly",
  /** The database cannot be reached or opened, or the connection to it was lost. */
  "Unavailable",
  /** A statement ran, or waited for an answer, past its bound. */
  "Timeout",
  /** A constraint or trigger of the schema refused the change. */
  "Constraint",
  /** The storage under the database failed: I/O error, disk or quota full, out of memory. */
  "Storage",
  /** The file is damaged or not a database at all. */
  "Corrupt",
  /** A stored row did not decode into the store's types. */
  "Decode",
  /** Anything else (a bug, a refused argument, an unknown code). */
  "Other"
)
export type StoreFailureReason = typeof StoreFailureReason.Type

/** SQLite primary result codes (an extended code such as `SQLITE_BUSY_SNAPSHOT` counts as its primary). */
const SQLITE: Readonly<Record<string, StoreFailureReason>> = {
  SQLITE_BUSY: "Lock",
  SQLITE_LOCKED: "Lock",
  SQLITE_READONLY: "ReadOnly",
  SQLITE_CONSTRAINT: "Constraint",
  SQLITE_CANTOPEN: "Unavailable",
  SQLITE_IOERR: "Storage",
  SQLITE_FULL: "Storage",
  SQLITE_NOMEM: "Storage",
  SQLITE_CORRUPT: "Corrupt",
  SQLITE_NOTADB: "Corrupt",
  SQLITE_INTERRUPT: "Timeout"
}

/** SQLite's reason for result code `code` (`SQLITE_…`, primary or extended). */
export const sqliteReason = (code: string): StoreFailureReason => {
  const primary = code.split("_", 2).join("_")
  return SQLITE[primary] ?? "Other"
}

/** Whole SQLSTATEs whose class alone would say something else. */
const PG_STATES: Readonly<Record<string, StoreFailureReason>> = {
  "55P03": "Lock", // lock_not_available (lock_timeout)
  "40001": "Conflict", // serialization_failure
  "40P01": "Conflict", // deadlock_detected
  "25006": "ReadOnly", // read_only_sql_transaction
  "57014": "Timeout", // query_canceled (statement_timeout)
  "25P03": "Unavailable", // idle_in_transaction_session_timeout: the server ended the session
  "57P01": "Unavailable", // admin_shutdown
  "57P02": "Unavailable", // crash_shutdown
  "57P03": "Unavailable", // cannot_connect_now
  "53100": "Storage", // disk_full
  "53200": "Storage", // out_of_memory
  "53300": "Unavailable", // too_many_connections
  "58030": "Storage", // io_error
  XX001: "Corrupt", // data_corrupted
  XX002: "Corrupt" // index_corrupted
}

/** SQLSTATE classes (first two characters). */
const PG_CLASSES: Readonly<Record<string, StoreFailureReason>> = {
  "08": "Unavailable", // connection exception
  "23": "Constraint", // integrity constraint violation (23001 restrict_violation: the immutability triggers)
  "28": "Unavailable", // invalid authorization
  "3D": "Unavailable", // invalid catalog name (no such database)
  "40": "Conflict" // transaction rollback
}

/** PostgreSQL's reason for SQLSTATE `state`. */
export const pgReason = (state: string): StoreFailureReason =>
  PG_STATES[state] ?? PG_CLASSES[state.slice(0, 2)] ?? "Other"

/** Node's socket and DNS error codes: the server cannot be reached, or the connection broke. */
const SOCKET = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ENOENT",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/** `pg`'s (and @effect/sql-pg's) client-side errors, which carry no code: their fixed texts. */
const PG_CLIENT: Readonly<Record<string, StoreFailureReason>> = {
  "Connection terminated": "Unavailable",
  "Connection terminated unexpectedly": "Unavailable",
  "Connection terminated due to connection timeout": "Unavailable",
  "Client has encountered a connection error and is not queryable": "Unavailable",
  "Client was closed and is not queryable": "Unavailable",
  "timeout exceeded when trying to connect": "Unavailable",
  "timeout expired": "Unavailable",
  "Connection timed out": "Unavailable",
  "Query read timeout": "Timeout"
}

/** The reason a node socket error code stands for (undefined for other codes). */
const socketReason = (code: string): StoreFailureReason | undefined =>
  SOCKET.has(code) ? "Unavailable" : undefined

/** The reason of one error object by its own code (or, for `pg`'s codeless errors, its fixed text). */
const ownReason = (error: object): StoreFailureReason | undefined => {
  if (ParseResult.isParseError(error)) return "Decode"
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined
  if (code !== undefined) {
    if (code.startsWith("SQLITE_")) return sqliteReason(code)
    // Before SQLSTATEs: EPIPE has their shape.
    const socket = socketReason(code)
    if (socket !== undefined) return socket
    if (/^[0-9A-Z]{5}$/.test(code)) return pgReason(code)
  }
  if (error instanceof Error && Object.getPrototypeOf(error) === Error.prototype)
    return PG_CLIENT[error.message]
  return undefined
}

/** `error` and its causes, nearest first (a few levels: SqlError → driver error → its cause). */
export const causeChain = (error: unknown): ReadonlyArray<object> => {
  const found: Array<object> = []
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    found.push(current)
    current = "cause" in current ? current.cause : undefined
  }
  return found
}

/** The reason for a failure: the nearest error in its cause chain that reports one; else `Other`. */
export const reasonOf = (error: unknown): StoreFailureReason => {
  for (const link of causeChain(error)) {
    const reason = ownReason(link)
    if (reason !== undefined) return reason
  }
  return "Other"
}
