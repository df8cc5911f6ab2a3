/**
 * What a lab run turns into for a scenario's assertions and its printed story: model requests,
 * custom messages, turn-intent lives, run rows and tool results, read from Pi's records and the
 * controller database.
 */
import { DEFAULT_LEASE_MS } from "../../../src/domain/timing-policy.ts"
import { contentText, type Reply } from "../harness/mock-openai.ts"
import type { RpcRecord } from "../harness/rpc-records.ts"
import type { Row } from "../harness/sqlite-peek.ts"

export const firstLine = (text: string, max = 110): string => {
  const line = text.split("\n")[0] ?? ""
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

export const describeReply = (reply: Reply): string => {
  const delay = reply.delayMs === undefined ? "" : ` (after ${reply.delayMs} ms)`
  if ("text" in reply) return `says ${JSON.stringify(firstLine(reply.text, 60))}${delay}`
  const calls = reply.toolCalls.map((call) => `${call.name} ${JSON.stringify(call.arguments)}`)
  return `calls ${calls.join(", ")}${delay}`
}

/** One model request: what the model got last, and how the script answered. */
export interface RequestView {
  readonly index: number
  /** Role and first line of the newest message (a custom message arrives as `user`). */
  readonly trigger: string
  readonly reply: string
  readonly outcome: string
}

export interface MessageView {
  readonly customType: string
  readonly firstLine: string
  readonly turnIntentId: string | null
}

/** One `workflow_turn_intents` row as a life: created → eligible → claimed → resolved. */
export interface IntentLife {
  readonly intentId: string
  readonly runId: string
  readonly cause: string
  readonly nodeId: string | null
  readonly observedState: string
  readonly reason: string | null
  readonly requestedAt: string
  readonly eligibleAt: string | null
  /** Derived: the claim's lease end minus the coordinator's lease (no column stores it). */
  readonly claimedAt: string | null
  readonly resolvedAt: string | null
  readonly resolution: string | null
}

export interface RunView {
  readonly runId: string
  readonly workflow: string
  readonly state: string
  readonly error: string | null
}

export interface ToolResultView {
  readonly tool: string
  readonly isError: boolean
  readonly text: string
}

export interface Observation {
  readonly requests: ReadonlyArray<RequestView>
  readonly messages: ReadonlyArray<MessageView>
  readonly intents: ReadonlyArray<IntentLife>
  readonly runs: ReadonlyArray<RunView>
  readonly toolResults: ReadonlyArray<ToolResultView>
  /** `ctx.ui.notify` texts (RPC `extension_ui_request` notify records). */
  readonly notices: ReadonlyArray<string>
  /** `ctx.ui.setWidget` blocks, lines joined (RPC `setWidget` records; an empty one clears). */
  readonly panels: ReadonlyArray<string>
}

export const str = (row: Row, key: string): string | null => {
  const value = row[key]
  return typeof value === "string" ? value : null
}

export const factsOf = (row: Row): { observedState: string; reason: string | null } => {
  const parsed: unknown = JSON.parse(str(row, "fallback_facts_json") ?? "{}")
  if (typeof parsed !== "object" || parsed === null) return { observedState: "?", reason: null }
  const observedState =
    "observedState" in parsed && typeof parsed.observedState === "string" ? parsed.observedState : "?"
  const reason = "reason" in parsed && typeof parsed.reason === "string" ? parsed.reason : null
  return { observedState, reason }
}

export const intentLife = (row: Row): IntentLife => {
  const expires = row.delivery_claim_expires_at
  return {
    intentId: str(row, "intent_id") ?? "?",
    runId: str(row, "run_id") ?? "?",
    cause: str(row, "cause") ?? "?",
    nodeId: str(row, "node_id"),
    ...factsOf(row),
    requestedAt: str(row, "requested_at") ?? "?",
    eligibleAt: str(row, "eligible_at"),
    claimedAt: typeof expires === "number" ? new Date(expires - DEFAULT_LEASE_MS).toISOString() : null,
    resolvedAt: str(row, "resolved_at"),
    resolution: str(row, "resolution")
  }
}

export const runView = (row: Row): RunView => {
  const errorJson = str(row, "error_json")
  const parsed: unknown = errorJson === null ? null : JSON.parse(errorJson)
  const error =
    typeof parsed === "object" && parsed !== null && "message" in parsed && typeof parsed.message === "string"
      ? parsed.message
      : null
  return {
    runId: str(row, "run_id") ?? "?",
    workflow: str(row, "workflow_name") ?? "?",
    state: str(row, "state") ?? "?",
    error
  }
}

export const toolResultOf = (record: RpcRecord): ToolResultView => {
  const result = record.result
  const content =
    typeof result === "object" && result !== null && "content" in result ? result.content : undefined
  return {
    tool: typeof record.toolName === "string" ? record.toolName : "?",
    isError: record.isError === true,
    text: contentText(content)
  }
}
