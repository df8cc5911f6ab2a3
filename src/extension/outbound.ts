/**
 * The extension's outbound boundary: every text it hands to Pi (custom messages, tool results,
 * notices) or writes to stderr passes the one redactor here (`domain/redact.ts`), so no
 * credential reaches the model, the session file, the TUI or a log. What is stored in the
 * database is never changed; only what is shown. Dependency-light: the entry uses it before the
 * application (and Effect) is loaded.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent"
import { redactRecord, redactText } from "../domain/redact.ts"
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
