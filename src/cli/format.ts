/**
 * Plain-text rendering for the operator CLI: aligned tables, relative times and optional
 * colour. Pure: the caller passes the current time and whether colour is wanted (only on a
 * TTY, and never when NO_COLOR is set), so the output is the same in tests and in scripts.
 */

export type Tone = "good" | "warn" | "bad" | "dim" | "plain"

const ANSI: Record<Exclude<Tone, "plain">, string> = {
  good: "\u001b[32m",
  warn: "\u001b[33m",
  bad: "\u001b[31m",
  dim: "\u001b[2m"
}
const RESET = "\u001b[0m"

export interface Style {
  readonly colour: boolean
  readonly now: number
}

export const paint = (style: Style, tone: Tone, text: string): string =>
  !style.colour || tone === "plain" || text === "" ? text : `${ANSI[tone]}${text}${RESET}`

/** Whether colour is wanted on this stream (a TTY, no NO_COLOR, TERM not dumb). */
export const wantsColour = (
  stream: { readonly isTTY?: boolean },
  env: Readonly<Record<string, string | undefined>>
): boolean => stream.isTTY === true && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

/** One cell: its text and how to colour it. */
export interface Cell {
  readonly text: string
  readonly tone?: Tone
}

export const cell = (text: string, tone: Tone = "plain"): Cell => ({ text, tone })

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export const table = (
  style: Style,
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<Cell>>
) => {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i]?.text ?? "").length))
  )
  const line = (cells: ReadonlyArray<Cell>) =>
    cells
      .map((c, i) => {
        const padding =
          i === cells.length - 1 ? "" : " ".repeat(Math.max(0, (widths[i] ?? 0) - c.text.length))
        return paint(style, c.tone ?? "plain", c.text) + padding
      })
      .join("  ")
      .trimEnd()
  return [line(headers.map((h) => cell(h, "dim"))), ...rows.map(line)].join("\n")
}

const units: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "m"],
  [1_000, "s"]
]

/** A duration in its largest unit, plus the next one while the first is below 10: `45s`, `3m 20s`, `12h`. */
export const duration = (millis: number): string => {
  const ms = Math.max(0, Math.round(millis))
  const index = units.findIndex(([size]) => ms >= size)
  const unit = units[index]
  if (unit === undefined) return `${ms}ms`
  const count = Math.floor(ms / unit[0])
  const next = units[index + 1]
  if (next === undefined || count >= 10) return `${count}${unit[1]}`
  const rest = Math.floor((ms - count * unit[0]) / next[0])
  return rest === 0 ? `${count}${unit[1]}` : `${count}${unit[1]} ${rest}${next[1]}`
}

/** `5m ago`, `in 30s`, or `-` for no time; an unparsable stamp is shown as stored. */
export const relative = (now: number, at: string | number | null): string => {
  if (at === null) return "-"
  const millis = typeof at === "number" ? at : Date.parse(at)
  if (Number.isNaN(millis)) return String(at)
  const delta = now - millis
  if (Math.abs(delta) < 1_000) return "now"
  return delta > 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`
}

/** Long values cut to `max` characters with an ellipsis, for table cells. */
export const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`

/** `key: value` lines with the keys aligned. */
export const fields = (style: Style, entries: ReadonlyArray<readonly [string, string, Tone?]>): string => {
  const width = Math.max(0, ...entries.map(([key]) => key.length))
  return entries
    .map(
      ([key, value, tone]) =>
        `${paint(style, "dim", `${key}:`.padEnd(width + 1))} ${paint(style, tone ?? "plain", value)}`
    )
    .join("\n")
}
