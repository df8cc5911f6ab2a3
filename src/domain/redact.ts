/**
 * The one redactor: every text that leaves the process (toward the model, the session file, the
 * TUI, notifications, the CLI, logs) passes `redactText`, which removes invisible and control
 * characters and replaces every credential of the catalogue (credentials.ts) with `[REDACTED]`.
 * Pure, synchronous and idempotent. Stored records keep what the workflow wrote; only what is
 * shown is redacted.
 */
import { REDACTED, redactCredentials } from "./credentials.ts"

export { REDACTED }

/**
 * Characters that must never reach a display or the model: C0 controls except tab and newline,
 * DEL, C1 controls, bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E,
 * U+200F, U+202A–U+202E, U+2066–U+2069) and zero-width characters (U+200B–U+200D, U+2060,
 * U+FEFF), which can hide or reorder text (and split a secret so no pattern sees it).
 */
export const isControlChar = (code: number): boolean =>
  (code <= 0x1f && code !== 0x09 && code !== 0x0a) ||
  (code >= 0x7f && code <= 0x9f) ||
  code === 0x061c ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x202a && code <= 0x202e) ||
  code === 0x2060 ||
  (code >= 0x2066 && code <= 0x2069) ||
  code === 0xfeff

// The same set as `isControlChar`, for one pass over the text.
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g

/** The text without control, bidirectional and zero-width characters. */
export const stripInvisible = (text: string): string => text.replace(INVISIBLE, "")

/** The text as it may be shown: invisible characters removed, credentials redacted. */
export const redactText = (text: string): string => redactCredentials(stripInvisible(text))

/** Reason text for fallback facts (intent-request.ts): the one redactor. */
export const redactReason = redactText

/** Free text an operator may read back (command output, arguments): the one redactor. */
export const redactSecrets = redactText

/** Nesting beyond which values are not walked (tool replies and message details are shallow). */
const MAX_DEPTH = 64

/**
 * A JSON-like value with every string in it (keys too) passed through `redactText`; other
 * values are kept. Arrays and plain objects are copied; deeper than 64 levels, a value is
 * replaced by `[REDACTED]` rather than walked.
 */
export const redactDeep = (value: unknown, depth = 0): unknown => {
  if (typeof value === "string") return redactText(value)
  if (typeof value !== "object" || value === null) return value
  if (depth >= MAX_DEPTH) return REDACTED
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) out[redactText(key)] = redactDeep(item, depth + 1)
  return out
}

/** `redactDeep` for a record (message details, tool-result details). */
export const redactRecord = (record: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(record)) out[redactText(key)] = redactDeep(item, 1)
  return out
}
