/**
 * The nesting bound of JSON a model or a user sends (tool arguments, run input, step output).
 * Deeper JSON would overflow the stack of every recursive copy, check and serialization on its
 * way (Pi clones tool arguments, JSON.stringify recurses), so it is refused before any of them
 * by an iterative walk. Free of Effect: the extension entry uses it before the application loads.
 */

/** Deepest nesting of arrays and objects accepted (`1` is 0 levels, `{}` is 1, `{"a": {}}` is 2). */
export const MAX_JSON_DEPTH = 64

/** True when `value` holds arrays or objects nested deeper than `limit`. Iterative; stops early. */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next.value !== "object" || next.value === null) continue
    const depth = next.depth + 1
    if (depth > limit) return true
    const items = Array.isArray(next.value) ? next.value : Object.values(next.value)
    for (const item of items) {
      if (typeof item === "object" && item !== null) stack.push({ value: item, depth })
    }
  }
  return false
}

/** The refusal of too deep JSON in `field`, one line. */
export const tooDeep = (field: string): string =>
  `${field} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; at most ${MAX_JSON_DEPTH} levels are accepted`
