/**
 * The extension's message cards in Pi's TUI (no effect in RPC/print modes), so no raw message
 * type (`[pi-workflows-agent-step]`) is ever shown: the workflow turn card for
 * `pi-workflows-deferred-turn` messages and terminal `pi-workflows-presentation` messages (whose
 * terminal decision block would otherwise fill the screen), the step card and the one-line
 * notification. The line builders are pure (tested without Pi); `registerDeferredTurnRenderer`
 * wraps them in pi-tui components. Details are read without trusting their shape (missing or
 * malformed details give a generic card, never an exception), and every shown field is sanitized
 * and bounded. Rendering only draws; it never adds an entry or starts a turn.
 */
import { contentText, sanitizeBlock, sanitizeLine } from "./outbound.ts"
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Box, Text } from "@earendil-works/pi-tui"
import {
  AGENT_STEP_TYPE,
  DEFERRED_TURN_TYPE,
  NOTIFICATION_TYPE,
  REMINDER_TYPE,
  PRESENTATION_TYPE
} from "../domain/message-types.ts"

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

/*
 * TUI lines for the other messages the extension sends, so no raw type name
 * (`[pi-workflows-agent-step]`) is ever shown: a step prompt as a small card (collapsed: which
 * workflow and step wait, the request, the prompt's first lines; expanded: the whole message the
 * model read), and a passive notification as one muted line. Pure; details are read without
 * trusting their shape, and every shown field is sanitized and bounded.
 */
/** Collapsed step cards show this many lines of the prompt. */
const PROMPT_PREVIEW_LINES = 3

const field = (details: unknown, key: string): string | undefined => {
  if (typeof details !== "object" || details === null || Array.isArray(details)) return undefined
  const value: unknown = Reflect.get(details, key)
  return typeof value === "string" ? value : undefined
}

/** The card of a `pi-workflows-agent-step` message (and, titled so, of a waiting presentation). */
export const stepCardLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean,
  title = "Workflow step"
): CardLine[] => {
  const workflow = sanitizeLine(field(message.details, "workflowName") ?? "workflow", 60) || "workflow"
  const node = sanitizeLine(field(message.details, "nodeId") ?? "step", 60) || "step"
  const lines: CardLine[] = [{ tone: "accent", text: `⏵ ${title} · ${workflow} · ${node}` }]
  const meta = [
    ["run", field(message.details, "runId")],
    ["request", field(message.details, "requestId")]
  ]
    .filter((pair): pair is [string, string] => pair[1] !== undefined)
    .map(([label, value]) => `${label} ${sanitizeLine(value, 80)}`)
  if (meta.length > 0) lines.push({ tone: "muted", text: meta.join(" · ") })
  const text = sanitizeBlock(contentText(message.content)).split("\n")
  if (expanded) {
    for (const line of text) lines.push({ tone: "text", text: line })
    return lines
  }
  // The prompt itself, up to the line that separates it from the tool instructions.
  const end = text.indexOf("---")
  const prompt = (end === -1 ? text : text.slice(0, end)).filter((line) => line.trim() !== "")
  for (const line of prompt.slice(0, PROMPT_PREVIEW_LINES))
    lines.push({ tone: "text", text: sanitizeLine(line, 160) })
  if (prompt.length > PROMPT_PREVIEW_LINES) lines.push({ tone: "muted", text: "…" })
  return lines
}

/**
 * A presentation: a waiting checkpoint's reads like a step (its question, the request that
 * answers it); a completed run's is the workflow turn card.
 */
export const presentationLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean
): CardLine[] =>
  field(message.details, "state") === "waiting" && field(message.details, "requestId") !== undefined
    ? stepCardLines(message, expanded, "Workflow waiting for an answer")
    : cardLines(message, expanded)

/** A passive notification (progress or final report): one line, for the user only. */
export const notificationLines = (message: { content: unknown; details?: unknown }): CardLine[] => {
  const kind = field(message.details, "kind")
  const mark = kind === "progress" ? "…" : "■"
  return [{ tone: "muted", text: `${mark} ${sanitizeLine(contentText(message.content), 300)}` }]
}

/** A step reminder: one line (which reminder, step and run), expanded to the whole message. */
export const reminderLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean
): CardLine[] => {
  const node = sanitizeLine(field(message.details, "nodeId") ?? "step", 60) || "step"
  const run = sanitizeLine(field(message.details, "runId") ?? "?", 80)
  const reminder =
    typeof message.details === "object" && message.details !== null && "reminder" in message.details
      ? String(message.details.reminder)
      : "?"
  const lines: CardLine[] = [
    { tone: "warning", text: `⏵ Step reminder ${reminder} of 2 · ${node} · run ${run}` }
  ]
  if (expanded)
    for (const line of sanitizeBlock(contentText(message.content)).split("\n"))
      lines.push({ tone: "text", text: line })
  return lines
}

/*
 * Registers the extension's message cards with Pi's TUI (no effect in RPC/print modes): the
 * workflow turn card for deferred turns and presentations (whose terminal decision block would
 * otherwise fill the screen), the step card and the one-line notification, so no raw message
 * type is ever shown. Rendering only draws; it never adds an entry or starts a turn.
 */
/** The message types drawn as a card. */
export const CARD_TYPES = [DEFERRED_TURN_TYPE, PRESENTATION_TYPE] as const

type Renderer = Parameters<ExtensionAPI["registerMessageRenderer"]>[1]

type Lines = (message: Parameters<Renderer>[0], expanded: boolean) => ReadonlyArray<CardLine>

const renderWith =
  (lines: Lines): Renderer =>
  (message, { expanded, outputPad }, theme) => {
    const paint = (tone: CardTone, text: string) => (tone === "text" ? text : theme.fg(tone, text))
    const text = lines(message, expanded)
      .map((line) => paint(line.tone, line.text))
      .join("\n")
    const box = new Box(outputPad, 1, (t: string) => theme.bg("customMessageBg", t))
    box.addChild(new Text(text, 0, 0))
    return box
  }

/** Every message type the extension shows in the session, with the lines it is drawn as. */
export const RENDERERS: ReadonlyArray<readonly [string, Lines]> = [
  [DEFERRED_TURN_TYPE, cardLines],
  [PRESENTATION_TYPE, presentationLines],
  [AGENT_STEP_TYPE, (message, expanded) => stepCardLines(message, expanded)],
  [REMINDER_TYPE, reminderLines],
  [NOTIFICATION_TYPE, notificationLines]
]

export const registerDeferredTurnRenderer = (pi: ExtensionAPI): void => {
  for (const [type, lines] of RENDERERS) pi.registerMessageRenderer(type, renderWith(lines))
}
