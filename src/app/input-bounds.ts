/**
 * The first bounds on what the user and the model send: the length of tool and command errors
 * and how they quote a bad value, in Unicode code points (the spec's "characters"; counting is
 * `domain/text.ts`), and the first check of raw `workflow` tool arguments, before anything
 * copies, validates or serializes them: they are an object, name a known action, and no field
 * nests deeper than `MAX_JSON_DEPTH` arrays and objects (src/domain/text.ts). Free of
 * Effect: the extension entry runs it in Pi's argument preparation, before the application
 * loads; `decodeToolInput` runs it again.
 */
import {
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  tooDeep,
  clipCodePoints as clip,
  codePointLength,
  indexAfter
} from "../domain/text.ts"
import { TOOL_ACTIONS } from "../domain/message-types.ts"

/** Every tool or command error is at most this many code points. */
export const MAX_ERROR_CHARS = 2_000

/** How much of a bad value an error quotes. */
export const MAX_QUOTE_CHARS = 40

/** C1 controls, zero-width and bidi controls: invisible or reordering, so a quote escapes them. */
const INVISIBLE = /[\u0080-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g

/** A JSON string literal of `text` whose every character is visible. */
const literal = (text: string): string =>
  JSON.stringify(text).replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** A short quotation of a bad value for an error: a JSON-quoted prefix and the value's size. */
export const quote = (value: unknown, max = MAX_QUOTE_CHARS): string => {
  if (typeof value === "string") {
    const size = codePointLength(value)
    if (size <= max) return literal(value)
    return `${literal(value.slice(0, indexAfter(value, max)))}… (${size.toLocaleString("en-US")} characters)`
  }
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return `an array of ${count(value.length, "item", "items")}`
  if (typeof value === "object") return "an object"
  return `a ${typeof value}`
}

/** "1 thing" / "20,000 things". */
export const count = (n: number, one: string, many: string): string =>
  `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

const ACTIONS = `one of ${TOOL_ACTIONS.join(", ")}`

/** A parameter name as the model wrote it: plain when short and simple, else quoted and cut. */
export const fieldName = (key: string): string => (/^[A-Za-z_][\w-]{0,39}$/.test(key) ? key : quote(key))

/** Raw arguments that name an action and are within the depth bound. */
export interface BoundedArguments {
  readonly action: (typeof TOOL_ACTIONS)[number]
  /** Every argument but `action`, as given. */
  readonly fields: Readonly<Record<string, unknown>>
}

const isAction = (value: unknown): value is BoundedArguments["action"] =>
  typeof value === "string" && (TOOL_ACTIONS as ReadonlyArray<string>).includes(value)

/**
 * The action and fields of raw tool arguments, or why they cannot be an action at all: one
 * bounded line.
 */
export const boundToolArguments = (params: unknown): BoundedArguments | { readonly problem: string } => {
  if (typeof params !== "object" || params === null || Array.isArray(params) || !("action" in params)) {
    return { problem: `workflow: "action" is required (${ACTIONS})` }
  }
  const { action, ...fields } = params
  if (!isAction(action)) return { problem: `workflow: unknown action ${quote(action)} (${ACTIONS})` }
  for (const [key, value] of Object.entries(fields)) {
    if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
      const problem = `workflow ${action}: ${tooDeep(fieldName(key))}, so send flatter JSON`
      return { problem: clip(problem, MAX_ERROR_CHARS) }
    }
  }
  return { action, fields }
}
