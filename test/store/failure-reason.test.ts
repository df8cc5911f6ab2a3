/**
 * `StoreFailure.reason` from the drivers' codes (src/store/store-errors.ts), both backends,
 * without a database: real driver error objects (better-sqlite3's SqliteError, pg's
 * DatabaseError, Node socket errors) under @effect/sql's SqlError, as the stores meet them. The
 * engine retries exactly the `Lock` failures (`isLockFailure`), whatever the message says.
 */
import * as SqlError from "@effect/sql/SqlError"
import Sqlite from "better-sqlite3"
import { Effect, Schema } from "effect"
import { DatabaseError } from "pg-protocol/dist/messages.js"
import { describe, expect, it } from "vitest"
import {
  asStoreFailure,
  isLockFailure,
  isUnsent,
  pgReason,
  reasonOf,
  sqliteReason,
  StoreFailure,
  storeFailure
} from "../../src/store/store-errors.ts"

const sqlite = (code: string, message = "sqlite says") =>
  new SqlError.SqlError({
    cause: new Sqlite.SqliteError(message, code),
    message: "Failed to execute statement"
  })

const pg = (state: string, message = "server says") => {
  const error = new DatabaseError(message, 0, "error")
  error.code = state
  return new SqlError.SqlError({ cause: error, message: "Failed to execute statement" })
}

const socket = (code: string) =>
  new SqlError.SqlError({
    cause: Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code }),
    message: "PgClient: Failed to connect"
  })

describe("SQLite result codes → reason", () => {
  it.each([
    ["SQLITE_BUSY", "Lock"],
    ["SQLITE_BUSY_SNAPSHOT", "Lock"],
    ["SQLITE_BUSY_RECOVERY", "Lock"],
    ["SQLITE_LOCKED", "Lock"],
    ["SQLITE_LOCKED_SHAREDCACHE", "Lock"],
    ["SQLITE_READONLY", "ReadOnly"],
    ["SQLITE_READONLY_DBMOVED", "ReadOnly"],
    ["SQLITE_CONSTRAINT_UNIQUE", "Constraint"],
    ["SQLITE_CONSTRAINT_TRIGGER", "Constraint"],
    ["SQLITE_CANTOPEN", "Unavailable"],
    ["SQLITE_IOERR_SHORT_READ", "Storage"],
    ["SQLITE_FULL", "Storage"],
    ["SQLITE_NOTADB", "Corrupt"],
    ["SQLITE_CORRUPT", "Corrupt"],
    ["SQLITE_ERROR", "Other"],
    ["SQLITE_MISMATCH", "Other"]
  ])("%s is %s", (code, reason) => {
    expect(sqliteReason(code)).toBe(reason)
    expect(reasonOf(sqlite(code))).toBe(reason)
  })
})

describe("PostgreSQL SQLSTATEs → reason", () => {
  it.each([
    ["55P03", "Lock"],
    ["40001", "Conflict"],
    ["40P01", "Conflict"],
    ["25006", "ReadOnly"],
    ["57014", "Timeout"],
    ["23505", "Constraint"],
    ["23514", "Constraint"],
    ["23001", "Constraint"],
    ["08006", "Unavailable"],
    ["08001", "Unavailable"],
    ["57P01", "Unavailable"],
    ["57P03", "Unavailable"],
    ["25P03", "Unavailable"],
    ["53300", "Unavailable"],
    ["3D000", "Unavailable"],
    ["28P01", "Unavailable"],
    ["53100", "Storage"],
    ["XX001", "Corrupt"],
    ["42P01", "Other"],
    ["22P02", "Other"]
  ])("%s is %s", (state, reason) => {
    expect(pgReason(state)).toBe(reason)
    expect(reasonOf(pg(state))).toBe(reason)
  })

  it("socket errors and pg's codeless client errors", () => {
    for (const code of ["ECONNREFUSED", "ECONNRESET", "EPIPE", "ENOENT", "ETIMEDOUT", "EHOSTUNREACH"]) {
      expect(reasonOf(socket(code))).toBe("Unavailable")
    }
    const client = (text: string) =>
      new SqlError.SqlError({ cause: new Error(text), message: "Failed to execute statement" })
    expect(reasonOf(client("Connection terminated unexpectedly"))).toBe("Unavailable")
    expect(reasonOf(client("Client has encountered a connection error and is not queryable"))).toBe(
      "Unavailable"
    )
    expect(reasonOf(client("timeout exceeded when trying to connect"))).toBe("Unavailable")
    expect(reasonOf(client("Query read timeout"))).toBe("Timeout")
    // Only the library's whole texts: an error that merely mentions one is not one.
    expect(reasonOf(client("my Query read timeout handler threw"))).toBe("Other")
  })
})

describe("StoreFailure.reason", () => {
  it("storeFailure and asStoreFailure fill it from the cause; the message stays the driver's", async () => {
    const failure = storeFailure("settle")(sqlite("SQLITE_BUSY", "database is locked"))
    expect(failure).toMatchObject({ _tag: "StoreFailure", reason: "Lock", operation: "settle" })
    expect(failure.message).toBe("SqliteError: database is locked")
    const mapped = await Effect.runPromise(
      Effect.flip(
        asStoreFailure("ensure")(Effect.fail(pg("25006", "cannot execute INSERT in a read-only transaction")))
      )
    )
    expect(mapped).toMatchObject({ _tag: "StoreFailure", reason: "ReadOnly", operation: "ensure" })
    const decoded = await Effect.runPromise(
      Effect.flip(asStoreFailure("get")(Schema.decodeUnknown(Schema.Number)("x")))
    )
    expect(decoded.reason).toBe("Decode")
  })

  it("a failure built without a reason is Other; the reason survives encoding", () => {
    expect(
      new StoreFailure({ operation: "claim", message: "leaseMs must be a positive integer" }).reason
    ).toBe("Other")
    const encoded = Schema.encodeSync(StoreFailure)(
      new StoreFailure({ operation: "x", reason: "Lock", message: "m" })
    )
    expect(encoded.reason).toBe("Lock")
  })
})

describe("isLockFailure", () => {
  it("is the Lock reason on either backend", () => {
    expect(isLockFailure(storeFailure("settle")(sqlite("SQLITE_BUSY")))).toBe(true)
    expect(isLockFailure(storeFailure("settle")(sqlite("SQLITE_LOCKED")))).toBe(true)
    expect(
      isLockFailure(storeFailure("settle")(pg("55P03", "canceling statement due to lock timeout")))
    ).toBe(true)
  })

  it("leaves failures a retry cannot fix, whatever their words", () => {
    expect(isLockFailure(storeFailure("settle")(sqlite("SQLITE_READONLY")))).toBe(false)
    expect(isLockFailure(storeFailure("settle")(pg("25006")))).toBe(false)
    expect(
      isLockFailure(storeFailure("settle")(pg("57014", "canceling statement due to statement timeout")))
    ).toBe(false)
    // The words of a lock are not a lock: only the reason counts.
    expect(isLockFailure(new StoreFailure({ operation: "settle", message: "database is locked" }))).toBe(
      false
    )
    const claimLost = { _tag: "ClaimLost", message: "database is locked" }
    expect(isLockFailure(claimLost)).toBe(false)
  })
})

describe("isUnsent (PostgreSQL: a write outside a transaction may be sent again)", () => {
  it("only when the statement cannot have applied", () => {
    // The server ended the session (rolled back), or no connection was ever used.
    expect(isUnsent(pg("57P01"))).toBe(true)
    expect(isUnsent(socket("ECONNREFUSED"))).toBe(true)
    expect(
      isUnsent(new SqlError.SqlError({ cause: new Error("boom"), message: "Failed to acquire connection" }))
    ).toBe(true)
    // The connection broke while the statement may have been running, or the server refused it.
    expect(
      isUnsent(
        new SqlError.SqlError({
          cause: new Error("Connection terminated unexpectedly"),
          message: "Failed to execute statement"
        })
      )
    ).toBe(false)
    expect(isUnsent(pg("40001"))).toBe(false)
    expect(isUnsent(pg("08006"))).toBe(false)
  })
})
