/**
 * Character bounds as the specs count them: "characters" are Unicode code points, so a bound
 * never splits a surrogate pair and an emoji counts once. Pure; dependency-free (the extension
 * entry and the TUI card use it without loading Effect).
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
