/**
 * What the operator CLI writes: plain-text rendering (aligned tables, clipped cells, optional
 * colour), the output boundary every line passes (`shown`, the one redactor around the colour
 * codes) and the CLI's own failure. Pure: the caller passes the current time and whether colour
 * is wanted (only on a TTY, and never when NO_COLOR is set), so the output is the same in tests
 * and in scripts.
 */
import { clipCodePoints, relative } from "../domain/text.ts"
import { redactText } from "../domain/redact.ts"
import { Data } from "effect"

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
  /** Every column in full (`--wide`); otherwise tables fit `WIDTH` columns. */
  readonly wide?: boolean
}

/** The terminal width tables fit by default. */
export const WIDTH = 80

export const paint = (style: Style, tone: Tone, text: string): string =>
  !style.colour || tone === "plain" || text === "" ? text : `${ANSI[tone]}${text}${RESET}`

/** A stored time, absolute and from now (`2026-12-01T10:00:00.000Z (5m ago)`); "-" for none. */
export const stamp = (style: Style, at: string | null): string =>
  at === null ? "-" : `${at} (${relative(style.now, at)})`

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

/** Cell and field texts are redacted (credentials, control and invisible characters) before they are painted. */
export const cell = (text: string, tone: Tone = "plain"): Cell => ({ text: redactText(text), tone })

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

/**
 * Long values cut to `max` characters (code points) with an ellipsis, for table cells; redacted
 * first, so a cut never leaves a secret too short for its pattern.
 */
export const clip = (text: string, max: number): string => clipCodePoints(redactText(text), Math.max(2, max))

/** `key: value` lines with the keys aligned. */
export const fields = (style: Style, entries: ReadonlyArray<readonly [string, string, Tone?]>): string => {
  const width = Math.max(0, ...entries.map(([key]) => key.length))
  return entries
    .map(
      ([key, value, tone]) =>
        `${paint(style, "dim", `${key}:`.padEnd(width + 1))} ${paint(style, tone ?? "plain", redactText(value))}`
    )
    .join("\n")
}

/**
 * Rows whose flexible columns (index → the narrowest it may get) are cut with an ellipsis, the
 * widest first, until a table line fits `width`; the other columns are kept whole.
 */
export const fitted = (
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<Cell>>,
  flexible: ReadonlyMap<number, number>,
  width = WIDTH
): ReadonlyArray<ReadonlyArray<Cell>> => {
  const length = (text: string) => [...text].length
  const widths = headers.map((header, i) =>
    Math.max(length(header), ...rows.map((row) => length(row[i]?.text ?? "")))
  )
  const total = () => widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1)
  while (total() > width) {
    let widest = -1
    for (const [i, min] of flexible) {
      const w = widths[i] ?? 0
      if (w > Math.max(min, length(headers[i] ?? "")) && (widest < 0 || w > (widths[widest] ?? 0))) widest = i
    }
    if (widest < 0) break
    widths[widest] = (widths[widest] ?? 1) - 1
  }
  return rows.map((row) =>
    row.map((c, i) =>
      flexible.has(i) && length(c.text) > (widths[i] ?? 0)
        ? { ...c, text: clipCodePoints(c.text, Math.max(2, widths[i] ?? 2)) }
        : c
    )
  )
}

/*
 * The CLI's output boundary: everything `main.ts` writes to stdout or stderr passes `shown`, the
 * one redactor (domain/redact.ts) applied around the CLI's own colour codes. Tables, pages,
 * `--json` and error lines alike, whatever command built them (doctor included): the database
 * keeps what the workflow wrote; the operator sees it without credentials or control characters.
 */
// SGR colour sequences (what `paint` uses); every other escape is dropped by the redactor.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the colour codes are matched on purpose
const SGR = /(\u001b\[[0-9;]*m)/

/** The text redacted piece by piece between colour codes, the colour codes kept. */
export const shown = (text: string): string => {
  if (!text.includes("\u001b")) return redactText(text)
  return text
    .split(SGR)
    .map((piece, i) => (i % 2 === 1 ? piece : redactText(piece)))
    .join("")
}

/* The CLI's own failure, turned into one line and an exit code by `main.ts`. */
/** A CLI-level failure: one line for the operator, and the exit code. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly exitCode: number
}> {}
