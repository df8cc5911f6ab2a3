/**
 * Read a Pi session JSONL file the way a test needs it: every entry, the custom messages an
 * extension sent, counts by `customType`, and lookup by `details.turnIntentId`.
 */
import { readFileSync } from "node:fs"
import { Schema } from "effect"

const EntrySchema = Schema.Struct(
  {
    type: Schema.String,
    id: Schema.optional(Schema.String),
    parentId: Schema.optional(Schema.NullOr(Schema.String)),
    timestamp: Schema.optional(Schema.String)
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
/** One line of the file: the `session` header or an entry (`message`, `custom_message`, …). */
export type SessionLine = typeof EntrySchema.Type

const CustomMessageSchema = Schema.Struct({
  type: Schema.Literal("custom_message"),
  id: Schema.String,
  parentId: Schema.NullOr(Schema.String),
  customType: Schema.String,
  content: Schema.Unknown,
  display: Schema.Boolean,
  details: Schema.optional(Schema.Unknown)
})
export type CustomMessageEntry = typeof CustomMessageSchema.Type

export interface SessionFileContents {
  /** Every complete line, header included, in file order. */
  readonly lines: ReadonlyArray<SessionLine>
  /**
   * A last line without its newline that is not valid JSON: what a crash mid-write leaves.
   * Pi skips malformed lines when it loads a session file.
   */
  readonly truncatedTail: string | undefined
}

const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(EntrySchema))
const decodeCustom = Schema.decodeUnknownSync(CustomMessageSchema)

/** Parse the file; a malformed line that is not a torn last line is an error naming its number. */
export const readSessionFile = (file: string): SessionFileContents => {
  const text = readFileSync(file, "utf8")
  const rawLines = text.split("\n")
  const endsClean = text.endsWith("\n")
  const lines: Array<SessionLine> = []
  let truncatedTail: string | undefined
  rawLines.forEach((raw, i) => {
    if (raw.trim() === "") return
    const isLast = i === rawLines.length - 1
    try {
      lines.push(decodeLine(raw))
    } catch (error) {
      if (isLast && !endsClean) {
        truncatedTail = raw
        return
      }
      throw new Error(`session file ${file}: line ${i + 1} is not a session entry: ${String(error)}`)
    }
  })
  return { lines, truncatedTail }
}

/** Every entry (the header excluded). */
export const sessionEntries = (file: string): ReadonlyArray<SessionLine> =>
  readSessionFile(file).lines.filter((line) => line.type !== "session")

/** The `custom_message` entries, in file order, optionally only of one `customType`. */
export const customMessages = (file: string, customType?: string): ReadonlyArray<CustomMessageEntry> =>
  sessionEntries(file)
    .filter((entry) => entry.type === "custom_message")
    .map((entry) => decodeCustom(entry))
    .filter((entry) => customType === undefined || entry.customType === customType)

/** How many custom messages of each `customType` the file holds. */
export const countByCustomType = (file: string): Readonly<Record<string, number>> => {
  const counts: Record<string, number> = {}
  for (const entry of customMessages(file)) counts[entry.customType] = (counts[entry.customType] ?? 0) + 1
  return counts
}

/** Custom messages whose `details.turnIntentId` equals `intentId` (a correct run has at most one). */
export const findByTurnIntentId = (file: string, intentId: string): ReadonlyArray<CustomMessageEntry> =>
  customMessages(file).filter((entry) => {
    const details = entry.details
    return (
      typeof details === "object" &&
      details !== null &&
      "turnIntentId" in details &&
      details.turnIntentId === intentId
    )
  })

/** Roles of the `message` entries in file order (user, assistant, toolResult, system, …). */
export const messageRoles = (file: string): ReadonlyArray<string> =>
  sessionEntries(file).flatMap((entry) => {
    const message = entry.message
    return entry.type === "message" &&
      typeof message === "object" &&
      message !== null &&
      "role" in message &&
      typeof message.role === "string"
      ? [message.role]
      : []
  })

/** Text of a custom message's `content` (a string or text blocks). */
export const customContentText = (entry: CustomMessageEntry): string => {
  const { content } = entry
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .map((block: unknown) =>
      typeof block === "object" && block !== null && "text" in block && typeof block.text === "string"
        ? block.text
        : ""
    )
    .join("")
}
