/**
 * Display-text hygiene for workflow-derived strings shown in the terminal: no escape sequences,
 * control, bidirectional or zero-width characters can reach the TUI, no credential is shown
 * (the one redactor, domain/redact.ts), and every field is bounded in characters (code points,
 * never splitting a surrogate pair).
 */
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"

// ESC-introduced sequences (CSI, OSC, …) go whole; the redactor then drops every remaining
// control, bidirectional and zero-width character.
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
const ESCAPES = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g

const clean = (text: string): string => redactText(text.replace(ESCAPES, ""))

/** One display line: escapes, invisibles and credentials removed, whitespace collapsed, at most `max` chars. */
export const sanitizeLine = (value: unknown, max = 120): string => {
  const text = typeof value === "string" ? value : value === undefined || value === null ? "" : String(value)
  return clipCodePoints(clean(text).replace(/\s+/g, " ").trim(), max)
}

/** Multi-line text: escapes, invisibles and credentials removed (newlines and tabs kept), bounded. */
export const sanitizeBlock = (value: string, max = 64 * 1024): string => clipCodePoints(clean(value), max)

/** The text of a message's content: a string, or the text parts of a content array. */
export const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .map((part: unknown) =>
      typeof part === "object" && part !== null && "text" in part && typeof part.text === "string"
        ? part.text
        : ""
    )
    .join("\n")
}
