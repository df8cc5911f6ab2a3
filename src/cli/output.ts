/**
 * The CLI's output boundary: everything `main.ts` writes to stdout or stderr passes `shown`, the
 * one redactor (domain/redact.ts) applied around the CLI's own colour codes. Tables, pages,
 * `--json` and error lines alike, whatever command built them (doctor included): the database
 * keeps what the workflow wrote; the operator sees it without credentials or control characters.
 */
import { redactText } from "../domain/redact.ts"

// SGR colour sequences (what format.ts paints with); every other escape is dropped by the redactor.
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
