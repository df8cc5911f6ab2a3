/**
 * The extension's outbound boundary: every text it hands to Pi (custom messages, tool results,
 * notices, TUI lines) or writes to stderr passes the one redactor here (`domain/redact.ts`), so no
 * credential reaches the model, the session file, the TUI or a log. What is stored in the
 * database is never changed; only what is shown. Display text is also sanitized: no escape
 * sequences, control, bidirectional or zero-width characters reach the TUI, and every field is
 * bounded in characters (code points, never splitting a surrogate pair). Dependency-light: the
 * entry uses it before the application (and Effect) is loaded.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent"
import { redactRecord, redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { CustomMessage } from "../session/pi-session.ts"

export type NoticeLevel = "info" | "warning" | "error"

/** A custom message as it may leave the process: content and every string in details redacted. */
export const shownMessage = (message: CustomMessage): CustomMessage => ({
  customType: message.customType,
  content: redactText(message.content),
  display: message.display,
  details: redactRecord(message.details)
})

/** One line on stderr, redacted. */
export const logLine = (level: NoticeLevel, text: string): void => {
  process.stderr.write(`[pi-workflow-turns] ${level}: ${redactText(text)}\n`)
}

/** A notice for the user: Pi's UI when there is one, stderr otherwise; redacted either way. */
export const notifyUser = (
  ctx: Pick<ExtensionContext, "hasUI" | "ui"> | undefined,
  text: string,
  level: NoticeLevel
): void => {
  if (ctx?.hasUI === true) ctx.ui.notify(redactText(text), level)
  else logLine(level, text)
}

/** The longest footer line and panel line shown (the TUI cuts wider ones at the terminal's edge). */
const LINE_MAX = 200
/** A panel's longest run of lines; the rest is counted in its last line. */
const PANEL_MAX_LINES = 30

/** One footer line for the user (`ctx.ui.setStatus`); undefined clears it. Only with a UI. */
export const showStatusLine = (
  ctx: Pick<ExtensionContext, "hasUI" | "ui"> | undefined,
  key: string,
  text: string | undefined
): void => {
  if (ctx?.hasUI !== true) return
  ctx.ui.setStatus(key, text === undefined ? undefined : sanitizeLine(text, LINE_MAX))
}

/** A text as panel lines: sanitized and redacted as a whole, each line bounded, at most PANEL_MAX_LINES. */
export const panelLines = (text: string): ReadonlyArray<string> => {
  const lines = sanitizeBlock(text)
    .split("\n")
    .map((line) => clipCodePoints(line.replace(/\t/g, "  ").trimEnd(), LINE_MAX))
  if (lines.length <= PANEL_MAX_LINES) return lines
  const more = lines.length - (PANEL_MAX_LINES - 1)
  return [...lines.slice(0, PANEL_MAX_LINES - 1), `… ${more} more lines`]
}

/**
 * A block of lines that stays above the editor until it is replaced or cleared (undefined):
 * command output the user reads for a while (`/workflow status`), where a notice would be
 * replaced by the next one. Without a UI, the text goes to stderr as a notice would.
 */
export const showPanel = (
  ctx: Pick<ExtensionContext, "hasUI" | "ui"> | undefined,
  key: string,
  text: string | undefined
): void => {
  if (ctx?.hasUI === true) ctx.ui.setWidget(key, text === undefined ? undefined : [...panelLines(text)])
  else if (text !== undefined) logLine("info", text)
}

export interface ToolResult {
  readonly content: Array<{ type: "text"; text: string }>
  readonly details: Readonly<Record<string, unknown>>
  readonly isError: boolean
}

/** The `workflow` tool's reply as Pi gets it: text and details redacted. */
export const shownToolResult = (reply: {
  readonly text: string
  readonly details: Readonly<Record<string, unknown>>
  readonly isError: boolean
}): ToolResult => ({
  content: [{ type: "text", text: redactText(reply.text) }],
  details: redactRecord(reply.details),
  isError: reply.isError
})

/*
 * Display-text hygiene for workflow-derived strings shown in the terminal: no escape sequences,
 * control, bidirectional or zero-width characters can reach the TUI, no credential is shown
 * (the one redactor, domain/redact.ts), and every field is bounded in characters (code points,
 * never splitting a surrogate pair).
 */
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
