/**
 * The TUI card for `pi-workflows-deferred-turn` messages. `cardLines` is pure (tested without
 * Pi); `renderDeferredTurn` wraps it in pi-tui components. Collapsed: a bounded summary read
 * from the message details. Expanded: the complete model-facing content. Missing or malformed
 * details give a generic card, never an exception.
 */
import { sanitizeBlock, sanitizeLine } from "./sanitize.ts"

export { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"

/** The display fields, each optional so a partial or older message still renders. */
interface CardDetails {
  readonly runId?: string
  readonly cause?: string
  readonly workflowName?: string
  readonly observedState?: string
  readonly restartCount?: number
  readonly restartLimit?: number
}

const STRING_FIELDS = ["runId", "cause", "workflowName", "observedState"] as const
const NUMBER_FIELDS = ["restartCount", "restartLimit"] as const

/**
 * Read the display fields without trusting the stored shape: null when details are not an
 * object or a display field has the wrong type. Plain checks keep this module free of Effect,
 * so the extension entry can register the renderer without loading the application.
 */
const readDetails = (value: unknown): CardDetails | null => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const out: { -readonly [K in keyof CardDetails]: CardDetails[K] } = {}
  for (const key of STRING_FIELDS) {
    const field: unknown = Reflect.get(value, key)
    if (field === undefined) continue
    if (typeof field !== "string") return null
    out[key] = field
  }
  for (const key of NUMBER_FIELDS) {
    const field: unknown = Reflect.get(value, key)
    if (field === undefined) continue
    if (typeof field !== "number") return null
    out[key] = field
  }
  return out
}

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
  const details = readDetails(message.details ?? {})
  const fields = details ?? {}
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
  if (details === null) lines.push({ tone: "warning", text: "(details unavailable)" })
  if (expanded) {
    for (const line of sanitizeBlock(contentText(message.content)).split("\n")) {
      lines.push({ tone: "text", text: line })
    }
  }
  return lines
}
