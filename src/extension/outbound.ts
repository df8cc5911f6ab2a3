/**
 * The extension's outbound boundary: every text it hands to Pi (custom messages, tool results,
 * notices) or writes to stderr passes the one redactor here (`domain/redact.ts`), so no
 * credential reaches the model, the session file, the TUI or a log. What is stored in the
 * database is never changed; only what is shown. Dependency-light: the entry uses it before the
 * application (and Effect) is loaded.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent"
import { redactRecord, redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { CustomMessage } from "../session/pi-session.ts"
import { sanitizeBlock, sanitizeLine } from "./sanitize.ts"

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
