/**
 * Length bounds for text shown to the model or the user, counted in Unicode code points (the
 * spec's "characters"), never cutting a surrogate pair. Free of Effect: the extension entry
 * uses it before the application loads.
 */

/** Every tool or command error is at most this many code points. */
export const MAX_ERROR_CHARS = 2_000

/** How much of a bad value an error quotes. */
export const MAX_QUOTE_CHARS = 40

/** The first `max` code points of `text` (the UTF-16 index where they end). */
const endOfPrefix = (text: string, max: number): number => {
  let i = 0
  for (let count = 0; count < max && i < text.length; count++) {
    const unit = text.charCodeAt(i)
    const pair =
      unit >= 0xd800 &&
      unit <= 0xdbff &&
      i + 1 < text.length &&
      text.charCodeAt(i + 1) >= 0xdc00 &&
      text.charCodeAt(i + 1) <= 0xdfff
    i += pair ? 2 : 1
  }
  return i
}

/** The number of code points in `text`. */
export const codePoints = (text: string): number => {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
    }
    count++
  }
  return count
}

/** `text` when it has at most `max` code points, else its prefix and "…" (`max` in all). */
export const clip = (text: string, max: number): string => {
  // At most `max` UTF-16 units is at most `max` code points.
  if (text.length <= max || endOfPrefix(text, max) >= text.length) return text
  return `${text.slice(0, endOfPrefix(text, Math.max(0, max - 1)))}…`
}

/** C1 controls, zero-width and bidi controls: invisible or reordering, so a quote escapes them. */
const INVISIBLE = /[\u0080-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g

/** A JSON string literal of `text` whose every character is visible. */
const literal = (text: string): string =>
  JSON.stringify(text).replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** A short quotation of a bad value for an error: a JSON-quoted prefix and the value's size. */
export const quote = (value: unknown, max = MAX_QUOTE_CHARS): string => {
  if (typeof value === "string") {
    const size = codePoints(value)
    if (size <= max) return literal(value)
    return `${literal(value.slice(0, endOfPrefix(value, max)))}… (${size.toLocaleString("en-US")} characters)`
  }
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return `an array of ${count(value.length, "item", "items")}`
  if (typeof value === "object") return "an object"
  return `a ${typeof value}`
}

/** "1 thing" / "20,000 things". */
export const count = (n: number, one: string, many: string): string =>
  `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`
