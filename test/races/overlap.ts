/**
 * Duplicate claims, judged from what the store granted: a claim holds from the store's `now`
 * (`expiresAt - leaseMs`) until `expiresAt`, or until its holder released it. Two claims of one
 * intent whose holding times overlap mean two processes held it at once.
 */
export interface GrantedClaim {
  readonly intentId: string
  readonly token: string
  readonly leaseMs: number
  readonly expiresAt: number
}

/** The pairs (earlier token, later token) of claims on one intent that overlap. */
export const overlappingClaims = (
  claims: ReadonlyArray<GrantedClaim>,
  released: ReadonlyArray<{ readonly intentId: string; readonly token: string }>
): ReadonlyArray<readonly [string, string]> => {
  const wasReleased = new Set(released.map((r) => `${r.intentId}|${r.token}`))
  const byIntent = new Map<string, Array<GrantedClaim>>()
  for (const claim of claims) byIntent.set(claim.intentId, [...(byIntent.get(claim.intentId) ?? []), claim])
  const overlaps: Array<readonly [string, string]> = []
  for (const [intentId, granted] of byIntent) {
    const ordered = [...granted].sort((a, b) => a.expiresAt - a.leaseMs - (b.expiresAt - b.leaseMs))
    for (let i = 1; i < ordered.length; i++) {
      const before = ordered[i - 1]
      const after = ordered[i]
      if (before === undefined || after === undefined) continue
      // A released claim ends early (the release is not timed): a later claim may start any time.
      if (wasReleased.has(`${intentId}|${before.token}`)) continue
      if (after.expiresAt - after.leaseMs < before.expiresAt) overlaps.push([before.token, after.token])
    }
  }
  return overlaps
}
