/**
 * Duplicate claims, judged from what the store granted: a claim holds from the store's `now`
 * (`expiresAt - leaseMs`) until `expiresAt`, unless its holder released it. Two claims of one
 * intent whose holding times overlap, neither released, mean two processes held it at once.
 *
 * A released claim proves nothing either way: its holder's clock read and the statement are
 * not one instant, so a claim whose window starts later may have been granted (and released)
 * before one whose window starts earlier.
 */
export interface GrantedClaim {
  readonly intentId: string
  readonly token: string
  readonly leaseMs: number
  readonly expiresAt: number
}

/** One intent held twice: each claim as `token [from, to)` in epoch milliseconds. */
export interface Overlap {
  readonly intentId: string
  readonly first: string
  readonly second: string
}

const from = (claim: GrantedClaim) => claim.expiresAt - claim.leaseMs

const window = (claim: GrantedClaim) => `${claim.token} [${from(claim)}, ${claim.expiresAt})`

/** The pairs of unreleased claims on one intent whose holding times overlap. */
export const overlappingClaims = (
  claims: ReadonlyArray<GrantedClaim>,
  released: ReadonlyArray<{ readonly intentId: string; readonly token: string }>
): ReadonlyArray<Overlap> => {
  const wasReleased = new Set(released.map((r) => `${r.intentId}|${r.token}`))
  const byIntent = new Map<string, Array<GrantedClaim>>()
  for (const claim of claims) {
    if (wasReleased.has(`${claim.intentId}|${claim.token}`)) continue
    byIntent.set(claim.intentId, [...(byIntent.get(claim.intentId) ?? []), claim])
  }
  const overlaps: Array<Overlap> = []
  for (const [intentId, held] of byIntent) {
    const ordered = [...held].sort((a, b) => from(a) - from(b))
    for (const [i, first] of ordered.entries()) {
      for (const second of ordered.slice(i + 1)) {
        if (from(second) < first.expiresAt)
          overlaps.push({ intentId, first: window(first), second: window(second) })
      }
    }
  }
  return overlaps
}
