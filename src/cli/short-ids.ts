/**
 * Short IDs, as git shows commits: a table shows the shortest prefix that is unique in that
 * listing (at least a minimum length), and every command that takes an ID takes a unique prefix.
 * An intent ID is `deferred-turn:<sha256 hex>`: its short form is a prefix of the digest alone.
 */

export const INTENT_PREFIX = "deferred-turn:"
/** Hex digits of an intent digest shown at least (48 bits: a collision is very unlikely). */
export const INTENT_MIN = 12
/** Characters of a run ID shown at least: a generated ID's creation stamp (`20261201T213417Z`). */
export const RUN_MIN = 16

/** The shortest prefix of each ID, at least `min` long, that no other ID in `ids` shares. */
export const uniquePrefixes = (ids: ReadonlyArray<string>, min: number): ReadonlyMap<string, string> => {
  const sorted = [...new Set(ids)].sort()
  const common = (a: string | undefined, b: string) => {
    if (a === undefined) return 0
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    return i
  }
  const shortest = new Map<string, string>()
  sorted.forEach((id, i) => {
    const shared = Math.max(common(sorted[i - 1], id), common(sorted[i + 1], id))
    shortest.set(id, id.slice(0, Math.max(min, shared + 1)))
  })
  return shortest
}

const digestOf = (intentId: string) =>
  intentId.startsWith(INTENT_PREFIX) ? intentId.slice(INTENT_PREFIX.length) : intentId

/** Intent IDs as shown in a table: digest prefixes unique among `ids`. */
export const shortIntentIds = (ids: ReadonlyArray<string>): ((intentId: string) => string) => {
  const map = uniquePrefixes(ids.map(digestOf), INTENT_MIN)
  return (intentId) => map.get(digestOf(intentId)) ?? intentId
}

/** Run IDs as shown in a table: prefixes unique among `ids`. */
export const shortRunIds = (ids: ReadonlyArray<string>): ((runId: string) => string) => {
  const map = uniquePrefixes(ids, RUN_MIN)
  return (runId) => map.get(runId) ?? runId
}

/** The intent-ID prefixes a typed prefix stands for: itself, and a bare digest prefix with the kind in front. */
export const intentPrefixesOf = (typed: string): ReadonlyArray<string> =>
  /^[0-9a-f]+$/.test(typed) ? [typed, `${INTENT_PREFIX}${typed}`] : [typed]
