/**
 * Display-text hygiene for workflow-derived strings shown in the terminal: no escape sequences
 * or control characters can reach the TUI, and every field is bounded.
 */

// ESC-introduced sequences (CSI, OSC, …) first, then any remaining C0/C1 control characters.
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
const ESCAPES = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g

/** One display line: escapes and controls removed, whitespace collapsed, at most `max` chars. */
export const sanitizeLine = (value: unknown, max = 120): string => {
  const text = typeof value === "string" ? value : value === undefined || value === null ? "" : String(value)
  const clean = text.replace(ESCAPES, "").replace(CONTROLS, "").replace(/\s+/g, " ").trim()
  return clean.length <= max ? clean : `${clean.slice(0, Math.max(0, max - 1))}…`
}

/** Multi-line text: escapes and controls removed (newlines and tabs kept), bounded in length. */
export const sanitizeBlock = (value: string, max = 64 * 1024): string => {
  const clean = value.replace(ESCAPES, "").replace(CONTROLS, "")
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`
}
