/**
 * What the operator CLI shows of waiting checkpoints (the store's `WaitRecord`s): for a run that
 * waits, what it asks (the prompt's first line, clipped), its request, since when, its deadline
 * and how to answer it; for a wait step that ended, who answered; the `--json` shape. Pure over
 * the records and a Style, like views.ts. The prompt is stored redacted; it is redacted again
 * here (`redactText`, then `clip`) and by the output boundary (`shown`) like every other text.
 */
import { redactText } from "../domain/redact.ts"
import { relative } from "../domain/text.ts"
import type { RunRecord } from "../store/run-store.ts"
import type { WaitRecord } from "../store/run-waits.ts"
import { clip, stamp, type Style, type Tone } from "./format.ts"

/** The longest question line `show` prints. */
export const MAX_QUESTION_CHARS = 100

/**
 * The prompt's first line of text, its spaces collapsed, clipped to `max`; ` …` after it when
 * more lines follow. Redacted as a whole first, so no credential is split across lines unseen.
 */
export const questionLine = (prompt: string, max = MAX_QUESTION_CHARS): string => {
  const lines = redactText(prompt)
    .split("\n")
    .map((line) => line.replace(/\s+/g, " ").trim())
    .filter((line) => line !== "")
  const first = lines[0]
  if (first === undefined) return "(no text)"
  const line = clip(first, max)
  return lines.length > 1 && !line.endsWith("…") ? `${line} …` : line
}

/** How a run waiting at a checkpoint is answered: the command, and where to type it. */
export const answerHint = (run: RunRecord): string =>
  `type /workflow answer ${run.runId} <text> in Pi in its session ${run.targetSessionId} ` +
  `(pi --session ${run.targetSessionId}); the model there can answer with the workflow tool's answer action`

/** A wait's deadline, absolute and from now, or that it has none. */
export const waitDeadline = (style: Style, wait: WaitRecord): string =>
  wait.deadlineAt === null
    ? "none (it waits until it is answered or the run is cancelled)"
    : stamp(style, new Date(wait.deadlineAt).toISOString())

/**
 * The `show` fields of a run that waits at a checkpoint, in place of its step deadline: the
 * question, the request, since when, the deadline and how to answer. `wait` is its open wait
 * (undefined when it could not be read: the request alone is shown).
 */
export const waitEntries = (
  style: Style,
  run: RunRecord,
  requestId: string,
  wait: WaitRecord | undefined
): ReadonlyArray<readonly [string, string, Tone?]> =>
  wait === undefined
    ? [
        ["request", requestId],
        ["answer", answerHint(run)]
      ]
    : [
        ["question", questionLine(wait.prompt), "warn"],
        ["request", wait.requestId],
        ["since", stamp(style, wait.since)],
        ["deadline", waitDeadline(style, wait)],
        ["answer", answerHint(run)]
      ]

/**
 * The note of a wait's step in the steps table: still waiting, or who answered and when; null
 * when the step's own note says it (a timeout, a cancel).
 */
export const waitNote = (style: Style, wait: WaitRecord): string | null => {
  if (wait.state === "open") return `waiting for an answer (request ${wait.requestId})`
  if (wait.state === "submitted" && wait.answeredBy !== null) {
    return `answered by the ${wait.answeredBy}${wait.answeredAt === null ? "" : ` ${relative(style.now, wait.answeredAt)}`}`
  }
  return null
}

/** A wait for `--json`: every field, the answer null until there is one, the deadline also as ISO. */
export const waitJson = (wait: WaitRecord) => ({
  ...wait,
  deadline: wait.deadlineAt === null ? null : new Date(wait.deadlineAt).toISOString(),
  answer: wait.state === "submitted" ? (wait.answer ?? null) : null
})
