/**
 * The TUI card for `pi-workflows-deferred-turn` messages and for terminal
 * `pi-workflows-presentation` messages. `cardLines` is pure (tested without
 * Pi); `renderDeferredTurn` wraps it in pi-tui components. Collapsed: a bounded summary read
 * from the message details. Expanded: the complete model-facing content. Missing or malformed
 * details give a generic card, never an exception.
 */
import { contentText, sanitizeBlock, sanitizeLine } from "./sanitize.ts"

/** The display fields, each optional so a partial or older message still renders. */
interface CardDetails {
  readonly runId?: string
  readonly cause?: string
  readonly workflowName?: string
  readonly observedState?: string
  /** Set on a run's terminal turn (src/terminal/terminal-decision.ts). */
  readonly reasonKind?: string
  /** Presentation messages name the run's state here. */
  readonly state?: string
  readonly restartCount?: number
  readonly restartLimit?: number
}

const STRING_FIELDS = ["runId", "cause", "workflowName", "observedState", "reasonKind", "state"] as const
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

export const cardLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean
): CardLine[] => {
  const details = readDetails(message.details ?? {})
  const fields = details ?? {}
  const workflow = sanitizeLine(fields.workflowName ?? "workflow", 60) || "workflow"
  const observed = fields.observedState ?? fields.state ?? fields.cause ?? "interrupted"
  const state = sanitizeLine(observed, 40) || "interrupted"
  // A terminal turn (the run ended) reads differently from an interrupted turn.
  const title = fields.reasonKind === undefined ? "Workflow turn" : "Workflow ended"
  const lines: CardLine[] = [{ tone: "accent", text: `⏵ ${title} · ${workflow} · ${state}` }]
  const meta: string[] = []
  if (fields.runId !== undefined) meta.push(`run ${sanitizeLine(fields.runId, 80)}`)
  if (fields.reasonKind !== undefined && fields.reasonKind !== observed) {
    meta.push(`reason ${sanitizeLine(fields.reasonKind, 40)}`)
  } else if (fields.cause !== undefined && fields.cause !== observed) {
    meta.push(`cause ${sanitizeLine(fields.cause, 40)}`)
  }
  if (fields.restartCount !== undefined) {
    const limit = fields.restartLimit === undefined ? "" : `/${sanitizeLine(fields.restartLimit, 4)}`
    meta.push(`restarts ${sanitizeLine(fields.restartCount, 4)}${limit}`)
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
