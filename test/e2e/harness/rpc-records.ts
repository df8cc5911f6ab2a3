/** The RPC records a real Pi process writes on stdout and reads on stdin (LF-delimited JSON). */

/** One JSON record Pi wrote to stdout: an event, a `response`, or an extension UI request. */
export type RpcRecord = { readonly type: string } & Readonly<Record<string, unknown>>

export interface RpcResponse extends RpcRecord {
  readonly type: "response"
  readonly command: string
  readonly success: boolean
  readonly id?: string
  readonly data?: unknown
  readonly error?: string
}

/** A command sent on stdin; `id` is filled in when missing. */
export type RpcCommand = { readonly type: string; readonly id?: string } & Readonly<Record<string, unknown>>

export const isRecord = (value: unknown): value is RpcRecord =>
  typeof value === "object" && value !== null && "type" in value && typeof value.type === "string"

export const isResponse = (record: RpcRecord): record is RpcResponse =>
  record.type === "response" && typeof record.success === "boolean" && typeof record.command === "string"

/** Short one-line picture of an event for error messages. */
export const describe = (record: RpcRecord): string => {
  switch (record.type) {
    case "response":
      return `response(${String(record.command)}${record.success === false ? ` FAILED: ${String(record.error)}` : ""})`
    case "agent_settled":
      return `agent_settled(aborted=${String(record.aborted)})`
    case "extension_error":
      return `extension_error(${String(record.event)}: ${String(record.error)})`
    case "message_update":
      return "message_update"
    default:
      return record.type
  }
}

/** A `message_end` record of the custom message type `customType` (the extension's messages). */
export const isCustomMessageEnd = (
  record: Readonly<Record<string, unknown>>,
  customType: string
): boolean => {
  if (record.type !== "message_end") return false
  const message = record.message
  return (
    typeof message === "object" &&
    message !== null &&
    "customType" in message &&
    message.customType === customType
  )
}
