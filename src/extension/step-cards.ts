/**
 * TUI lines for the other messages the extension sends, so no raw type name
 * (`[pi-workflows-agent-step]`) is ever shown: a step prompt as a small card (collapsed: which
 * workflow and step wait, the request, the prompt's first lines; expanded: the whole message the
 * model read), and a passive notification as one muted line. Pure; details are read without
 * trusting their shape, and every shown field is sanitized and bounded.
 */
import type { CardLine } from "./deferred-turn-card.ts"
import { contentText, sanitizeBlock, sanitizeLine } from "./sanitize.ts"

/** Collapsed step cards show this many lines of the prompt. */
const PROMPT_PREVIEW_LINES = 3

const field = (details: unknown, key: string): string | undefined => {
  if (typeof details !== "object" || details === null || Array.isArray(details)) return undefined
  const value: unknown = Reflect.get(details, key)
  return typeof value === "string" ? value : undefined
}

/** The card of a `pi-workflows-agent-step` message. */
export const stepCardLines = (
  message: { content: unknown; details?: unknown },
  expanded: boolean
): CardLine[] => {
  const workflow = sanitizeLine(field(message.details, "workflowName") ?? "workflow", 60) || "workflow"
  const node = sanitizeLine(field(message.details, "nodeId") ?? "step", 60) || "step"
  const lines: CardLine[] = [{ tone: "accent", text: `⏵ Workflow step · ${workflow} · ${node}` }]
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

/** A passive notification (progress or final report): one line, for the user only. */
export const notificationLines = (message: { content: unknown; details?: unknown }): CardLine[] => {
  const kind = field(message.details, "kind")
  const mark = kind === "progress" ? "…" : "■"
  return [{ tone: "muted", text: `${mark} ${sanitizeLine(contentText(message.content), 300)}` }]
}
