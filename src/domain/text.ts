/**
 * Text as the specs count it and people read it: character bounds in code points, durations and
 * relative times, and the nesting bound of JSON a model or a user sends. Pure; dependency-free
 * (the extension entry and the TUI card use it without loading Effect).
 */

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff

/** The number of code points (a lone surrogate counts as one). */
export const codePointLength = (text: string): number => {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1))) i++
    count++
  }
  return count
}

/** The UTF-16 index after the first `count` code points (the text's length when it has fewer). */
export const indexAfter = (text: string, count: number): number => {
  let i = 0
  for (let seen = 0; seen < count && i < text.length; seen++) {
    i += isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1)) ? 2 : 1
  }
  return i
}

/** At most `max` code points; none are counted when the UTF-16 length already fits. */
export const fitsCodePoints = (text: string, max: number): boolean =>
  text.length <= max || codePointLength(text) <= max

/**
 * The text itself when it has at most `max` code points; otherwise its first code points and
 * `marker`, together exactly `max` code points (the marker alone when it does not fit).
 */
export const clipCodePoints = (text: string, max: number, marker = "…"): string => {
  if (fitsCodePoints(text, max)) return text
  const keep = Math.max(0, max - codePointLength(marker))
  return `${text.slice(0, indexAfter(text, keep))}${marker}`
}

/* Durations and times as people read them: `3m 20s`, `5m ago`, `in 30s`. Pure. */
const units: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "m"],
  [1_000, "s"]
]

/** A duration in its largest unit, plus the next one while the first is below 10: `45s`, `3m 20s`, `12h`. */
export const duration = (millis: number): string => {
  const ms = Math.max(0, Math.round(millis))
  const index = units.findIndex(([size]) => ms >= size)
  const unit = units[index]
  if (unit === undefined) return `${ms}ms`
  const count = Math.floor(ms / unit[0])
  const next = units[index + 1]
  if (next === undefined || count >= 10) return `${count}${unit[1]}`
  const rest = Math.floor((ms - count * unit[0]) / next[0])
  return rest === 0 ? `${count}${unit[1]}` : `${count}${unit[1]} ${rest}${next[1]}`
}

/** `5m ago`, `in 30s`, or `-` for no time; an unparsable stamp is shown as stored. */
export const relative = (now: number, at: string | number | null): string => {
  if (at === null) return "-"
  const millis = typeof at === "number" ? at : Date.parse(at)
  if (Number.isNaN(millis)) return String(at)
  const delta = now - millis
  if (Math.abs(delta) < 1_000) return "now"
  return delta > 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`
}

/*
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
