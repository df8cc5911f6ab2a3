/**
 * How the stores report failures. An SQL error (the driver's) or a stored row that does not
 * decode becomes the operation's `StoreFailure`, in the driver's own words, with a `reason`
 * decided from the driver's codes; the operation's domain errors pass through unchanged. Every
 * store maps with `asStoreFailure`. Also the store's own error types (an incompatible or legacy
 * database) and which PostgreSQL failures a transaction retry can fix.
 *
 * The reason is decided from what the drivers report as codes, on the error and its causes
 * (SqlError → driver error → …): better-sqlite3's `SqliteError.code`, PostgreSQL's SQLSTATE,
 * Node's socket `code`. Callers (the engine's lock retries, the CLI's "busy" answer) read the
 * reason, never the message. One exception: `pg`'s own client-side errors (a connection that
 * ended, a read timeout) carry no code at all; they are recognised by the library's fixed
 * texts, compared whole.
 */
import * as SqlError from "@effect/sql/SqlError"
import { Effect, ParseResult, Schema } from "effect"

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

/**
 * A store failed (a lock, read-only, unreachable, I/O, …). `reason` is what code acts on;
 * `message` is for people. Wraps the underlying error. Built without a reason, it is `Other`.
 */
export class StoreFailure extends Schema.TaggedError<StoreFailure>()("StoreFailure", {
  operation: Schema.String,
  reason: Schema.optionalWith(StoreFailureReason, { default: () => "Other" }),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/**
 * The database holds pending `launch_failure` notifications from the earlier alpha contract.
 * They are not migrated or deleted; the operator resets the store.
 */
export class LegacyLaunchNotifications extends Schema.TaggedError<LegacyLaunchNotifications>()(
  "LegacyLaunchNotifications",
  { databasePath: Schema.String, pending: Schema.Number }
) {
  override get message() {
    return (
      `The controller store ${this.databasePath} has ${this.pending} pending launch_failure ` +
      "notification(s) from an earlier alpha release; this release replaces them with turn intents " +
      "and will not reinterpret or delete them. To reset the controller store: stop Pi, move " +
      `${this.databasePath} (and its -wal and -shm files, if present) aside, then start Pi again; ` +
      "a fresh store is created on open."
    )
  }
}

/** The database belongs to another schema family or version. */
export class IncompatibleStore extends Schema.TaggedError<IncompatibleStore>()("IncompatibleStore", {
  databasePath: Schema.String,
  found: Schema.String
}) {
  override get message() {
    return `The database ${this.databasePath} has schema "${this.found}", expected "pi-workflows.controller-store.v1"`
  }
}

/**
 * A store failure that a later attempt can fix: another connection held a lock past the busy
 * budget (reason `Lock`: SQLite's busy and locked codes; PostgreSQL's `lock_timeout`, SQLSTATE
 * 55P03, which the PostgreSQL layer sets to the same budget). Read-only files, I/O errors and
 * bad rows are not retried.
 */
export const isLockFailure = (error: { readonly _tag: string }): boolean =>
  error._tag === "StoreFailure" && "reason" in error && error.reason === "Lock"

/** What a store operation may meet below its own logic. */
export type InfraError = SqlError.SqlError | ParseResult.ParseError

const isInfraError = (error: unknown): error is InfraError =>
  error instanceof SqlError.SqlError || ParseResult.isParseError(error)

/** One SQL (or row decoding) error as `operation`'s `StoreFailure`. */
export const storeFailure =
  (operation: string) =>
  (error: { readonly cause?: unknown; readonly message: string }): StoreFailure =>
    new StoreFailure({
      operation,
      reason: reasonOf(error),
      message: String(error.cause ?? error.message),
      cause: error
    })

/** `effect` with its SQL and decoding errors as `operation`'s `StoreFailure`; other errors unchanged. */
export const asStoreFailure =
  (operation: string) =>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, Exclude<E, Extract<E, InfraError>> | StoreFailure, R> =>
    Effect.catchIf(
      effect,
      (error): error is Extract<E, InfraError> => isInfraError(error),
      (error) => Effect.fail(storeFailure(operation)(error))
    )

// --- PostgreSQL failures a transaction retry can fix (`pg/database-pg.ts`) -----------------------
// A serialization failure or deadlock (40001, 40P01) rolled the transaction back: running it
// again is the whole remedy. A lost connection rolled back a transaction that had not reached
// COMMIT, so it may run again on another connection; one that broke during COMMIT is not
// retried (it may have committed).

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
