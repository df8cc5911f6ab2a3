/**
 * Which store failures the engine retries: a lock held past the budget on either backend, and
 * nothing a retry cannot fix.
 */
import { describe, expect, it } from "vitest"
import { isLockFailure, StoreFailure } from "../../src/store/store-errors.ts"

const failure = (message: string) => new StoreFailure({ operation: "settle", message })

describe("isLockFailure", () => {
  it("recognises SQLite's busy and locked errors", () => {
    expect(isLockFailure(failure("SqliteError: database is locked"))).toBe(true)
    expect(isLockFailure(failure("SQLITE_BUSY: database is locked"))).toBe(true)
    expect(isLockFailure(failure("SQLITE_LOCKED: database table is locked"))).toBe(true)
  })

  it("recognises PostgreSQL's lock_timeout (55P03)", () => {
    expect(isLockFailure(failure("error: canceling statement due to lock timeout"))).toBe(true)
  })

  it("leaves failures a retry cannot fix", () => {
    expect(isLockFailure(failure("SqliteError: attempt to write a readonly database"))).toBe(false)
    expect(isLockFailure(failure("error: cannot execute UPDATE in a read-only transaction"))).toBe(false)
    expect(isLockFailure(failure("error: canceling statement due to statement timeout"))).toBe(false)
    expect(isLockFailure({ _tag: "ClaimLost", message: "database is locked" })).toBe(false)
  })
})
