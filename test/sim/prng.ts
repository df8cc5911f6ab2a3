/**
 * A small seeded PRNG (mulberry32) for schedule generation. Pure and stable across Node
 * versions, so a seed printed by a failing run replays the same schedule anywhere.
 */
export interface Prng {
  /** A float in [0, 1). */
  readonly next: () => number
  /** An integer in [min, max] (both inclusive). */
  readonly int: (min: number, max: number) => number
  readonly bool: (probability?: number) => boolean
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  /** Pick a key by weight; keys with weight 0 are never picked. */
  readonly weighted: <K>(entries: ReadonlyArray<readonly [K, number]>) => K
}

export const makePrng = (seed: number): Prng => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  const pick = <A>(items: ReadonlyArray<A>): A => {
    const item = items[int(0, items.length - 1)]
    if (item === undefined) throw new Error("pick from an empty list")
    return item
  }
  const weighted = <K>(entries: ReadonlyArray<readonly [K, number]>): K => {
    const total = entries.reduce((sum, [, w]) => sum + w, 0)
    let roll = next() * total
    for (const [key, weight] of entries) {
      roll -= weight
      if (roll < 0 && weight > 0) return key
    }
    const last = entries.filter(([, w]) => w > 0).at(-1)
    if (last === undefined) throw new Error("weighted pick without positive weights")
    return last[0]
  }
  return { next, int, bool: (probability = 0.5) => next() < probability, pick, weighted }
}
