/**
 * Bench only: the SQLite texts of bench/sql.ts in PostgreSQL dialect, for its floor clients.
 * Most differ only in placeholders (`?` → `$n`). The two claims differ in substance: under READ
 * COMMITTED, `UPDATE … WHERE intent_id IN (SELECT … LIMIT n)` lets two claimants pick the same
 * rows from their snapshots, and the second one's UPDATE, after waiting for the first one's row
 * lock, re-checks only `intent_id IN (…)` and claims them again. Locking the chosen rows in the
 * subquery (`FOR UPDATE SKIP LOCKED`) makes each claimant take rows no one else is taking, and
 * the lock re-checks the row's current version against the claimability conditions.
 */
/** `?` placeholders to `$1, $2, …` (the store's texts hold no `?` inside literals). */
export const numberPlaceholders = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

/**
 * A claim picks its rows in a subquery that ends in a constant row limit (`LIMIT n)`, see
 * turn-intent-sql.ts); on PostgreSQL that subquery locks what it picks and skips what others hold.
 */
const lockClaimedRows = (text: string): string =>
  text.startsWith("UPDATE workflow_turn_intents")
    ? text.replace(
        /LIMIT (\d+)\)/g,
        (_match, limit: string) => `LIMIT ${limit}\n      FOR UPDATE SKIP LOCKED)`
      )
    : text

/** A statement text as the SQLite store prepares it, in PostgreSQL's dialect. */
export const toPgDialect = (sqliteText: string): string => numberPlaceholders(lockClaimedRows(sqliteText))
