/**
 * The bounds of tool and command errors and how they quote a bad value, in Unicode code points
 * (the spec's "characters"; counting is `domain/text.ts`). Free of Effect: the extension
 * entry uses it before the application loads.
 */
import { codePointLength, indexAfter } from "../domain/text.ts"

/** Every tool or command error is at most this many code points. */
export const MAX_ERROR_CHARS = 2_000

/** How much of a bad value an error quotes. */
export const MAX_QUOTE_CHARS = 40

/** C1 controls, zero-width and bidi controls: invisible or reordering, so a quote escapes them. */
const INVISIBLE = /[\u0080-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g

/** A JSON string literal of `text` whose every character is visible. */
const literal = (text: string): string =>
  JSON.stringify(text).replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** A short quotation of a bad value for an error: a JSON-quoted prefix and the value's size. */
export const quote = (value: unknown, max = MAX_QUOTE_CHARS): string => {
  if (typeof value === "string") {
    const size = codePointLength(value)
    if (size <= max) return literal(value)
    return `${literal(value.slice(0, indexAfter(value, max)))}… (${size.toLocaleString("en-US")} characters)`
  }
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return `an array of ${count(value.length, "item", "items")}`
  if (typeof value === "object") return "an object"
  return `a ${typeof value}`
}

/** "1 thing" / "20,000 things". */
export const count = (n: number, one: string, many: string): string =>
  `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`
