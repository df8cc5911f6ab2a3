/**
 * The TUI card for `pi-workflows-deferred-turn` messages. `cardLines` is pure (tested without
 * Pi); `renderDeferredTurn` wraps it in pi-tui components. Collapsed: a bounded summary read
 * from the message details. Expanded: the complete model-facing content. Missing or malformed
 * details give a generic card, never an exception.
 */
import { Schema } from "effect"
import { sanitizeBlock, sanitizeLine } from "./sanitize.ts"

/** Only the display fields; everything optional so a partial or older message still renders. */
const CardDetails = Schema.Struct({
  runId: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.String),
  workflowName: Schema.optional(Schema.String),
  observedState: Schema.optional(Schema.String),
  restartCount: Schema.optional(Schema.Number),
  restartLimit: Schema.optional(Schema.Number)
})
const decodeDetails = Schema.decodeUnknownOption(CardDetails)

export type CardTone = "accent" | "muted" | "warning" | "text"
export interface CardLine {
  readonly tone: CardTone
  readonly text: string
}

const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        typeof part === "object" && part !== null && "text" in part && typeof part.text === "string"
          ? part.text
          : ""
      )
      .join("\n")
  }
  return ""
}

export const cardLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean
): CardLine[] => {
  const details = decodeDetails(message.details ?? {})
  const fields = details._tag === "Some" ? details.value : {}
  const workflow = sanitizeLine(fields.workflowName ?? "workflow", 60) || "workflow"
  const state = sanitizeLine(fields.observedState ?? fields.cause ?? "interrupted", 40) || "interrupted"
  const lines: CardLine[] = [{ tone: "accent", text: `⏵ Workflow turn · ${workflow} · ${state}` }]
  const meta: string[] = []
  if (fields.runId !== undefined) meta.push(`run ${sanitizeLine(fields.runId, 80)}`)
  if (fields.cause !== undefined && fields.cause !== fields.observedState) {
    meta.push(`cause ${sanitizeLine(fields.cause, 40)}`)
  }
  if (fields.restartCount !== undefined) {
    const limit = fields.restartLimit === undefined ? "" : `/${fields.restartLimit}`
    meta.push(`restarts ${fields.restartCount}${limit}`)
  }
  if (meta.length > 0) lines.push({ tone: "muted", text: meta.join(" · ") })
  if (details._tag === "None") lines.push({ tone: "warning", text: "(details unavailable)" })
  if (expanded) {
    for (const line of sanitizeBlock(contentText(message.content)).split("\n")) {
      lines.push({ tone: "text", text: line })
    }
  }
  return lines
}
