/**
 * Row shapes of the run tables and their strict decoding into records. JSON columns are parsed
 * here, so nothing downstream ever sees unchecked stored text.
 */
import { Option, ParseResult, Schema } from "effect"
import { Cause } from "../domain/turn-intent.ts"
import {
  EndBy,
  EndKind,
  RunError,
  type RunEvent,
  RunEventKind,
  type RunRecord,
  type RequestRecord,
  RunState,
  StepOutcome,
  type StepRecord,
  SubmitReceipt
} from "./run-store.ts"

const Json = Schema.parseJson()
/** SQL NULL is "absent"; the JSON text `null` is a present null. */
const OptionalJson = Schema.transformOrFail(
  Schema.NullOr(Schema.String),
  Schema.OptionFromSelf(Schema.Unknown),
  {
    strict: true,
    decode: (text, _options, ast) => {
      if (text === null) return ParseResult.succeed(Option.none())
      try {
        return ParseResult.succeed(Option.some(JSON.parse(text) as unknown))
      } catch (error) {
        return ParseResult.fail(new ParseResult.Type(ast, text, `invalid JSON: ${String(error)}`))
      }
    },
    encode: (value) =>
      ParseResult.succeed(Option.match(value, { onNone: () => null, onSome: (v) => JSON.stringify(v) }))
  }
)
const Flag = Schema.Literal(0, 1)

/**
 * The definition snapshot, parsed once per distinct text. Every full read of a run carries it
 * (the runner's `settle` reads the run back at each step), and parsing a large workflow's
 * snapshot per step made a step cost as much as the workflow. Records share the parsed value,
 * which nothing changes.
 */
let lastSnapshot: { readonly text: string; readonly value: unknown } | null = null
const SnapshotJson = Schema.transformOrFail(Schema.String, Schema.Unknown, {
  strict: true,
  decode: (text, _options, ast) => {
    if (lastSnapshot?.text === text) return ParseResult.succeed(lastSnapshot.value)
    try {
      const value: unknown = JSON.parse(text)
      lastSnapshot = { text, value }
      return ParseResult.succeed(value)
    } catch (error) {
      return ParseResult.fail(new ParseResult.Type(ast, text, `invalid JSON: ${String(error)}`))
    }
  },
  encode: (value) => ParseResult.succeed(JSON.stringify(value))
})

export const RunRow = Schema.Struct({
  run_id: Schema.String,
  workflow_name: Schema.String,
  workflow_ref: Schema.String,
  revision: Schema.NullOr(Schema.Number),
  source_fingerprint: Schema.String,
  snapshot_json: SnapshotJson,
  target_session_id: Schema.String,
  origin: Schema.Literal("tool", "command"),
  input_json: Json,
  state: RunState,
  current_node_id: Schema.NullOr(Schema.String),
  current_attempt_id: Schema.NullOr(Schema.String),
  max_steps: Schema.Number,
  result_json: OptionalJson,
  error_json: Schema.NullOr(Schema.parseJson(RunError)),
  pause_requested: Flag,
  cancel_requested: Schema.NullOr(Schema.Literal("agent", "user")),
  parked_reason: Schema.NullOr(Schema.String),
  interruptions: Schema.Number,
  abort_cause: Schema.NullOr(Cause),
  abort_node_id: Schema.NullOr(Schema.String),
  abort_attempt_id: Schema.NullOr(Schema.String),
  abort_interruption: Schema.NullOr(Schema.Number),
  abort_pending: Flag,
  claim_token: Schema.NullOr(Schema.String),
  claim_expires_at: Schema.NullOr(Schema.Number),
  claims: Schema.Number,
  end_kind: Schema.NullOr(EndKind),
  end_by: Schema.NullOr(EndBy),
  end_node_id: Schema.NullOr(Schema.String),
  end_attempt_id: Schema.NullOr(Schema.String),
  open_request_id: Schema.NullOr(Schema.String),
  step_count: Schema.Number,
  created_at: Schema.String,
  updated_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  ended_at: Schema.NullOr(Schema.String)
})

export const toRun = (row: typeof RunRow.Type): RunRecord => ({
  runId: row.run_id,
  workflowName: row.workflow_name,
  workflowRef: row.workflow_ref,
  revision: row.revision,
  sourceFingerprint: row.source_fingerprint,
  snapshot: row.snapshot_json,
  targetSessionId: row.target_session_id,
  origin: row.origin,
  input: row.input_json,
  state: row.state,
  currentNodeId: row.current_node_id,
  currentAttemptId: row.current_attempt_id,
  maxSteps: row.max_steps,
  result: row.result_json,
  error: row.error_json,
  end:
    row.end_kind === null || row.end_by === null
      ? null
      : { kind: row.end_kind, by: row.end_by, nodeId: row.end_node_id, attemptId: row.end_attempt_id },
  pauseRequested: row.pause_requested === 1,
  cancelRequested: row.cancel_requested,
  parkedReason: row.parked_reason,
  interruptions: row.interruptions,
  abort:
    row.abort_cause === null || row.abort_interruption === null
      ? null
      : {
          cause: row.abort_cause,
          nodeId: row.abort_node_id,
          attemptId: row.abort_attempt_id,
          interruption: row.abort_interruption
        },
  abortPending: row.abort_pending === 1,
  claimToken: row.claim_token,
  claimExpiresAt: row.claim_expires_at,
  claims: row.claims,
  openRequestId: row.open_request_id,
  stepCount: row.step_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  startedAt: row.started_at,
  endedAt: row.ended_at
})

export const StepRow = Schema.Struct({
  run_id: Schema.String,
  seq: Schema.Number,
  node_id: Schema.String,
  attempt_id: Schema.String,
  timeout_ms: Schema.NullOr(Schema.Number),
  outcome: Schema.NullOr(StepOutcome),
  output_json: OptionalJson,
  error: Schema.NullOr(Schema.String),
  interrupted: Schema.NullOr(Schema.String),
  started_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String)
})

export const toStep = (row: typeof StepRow.Type): StepRecord => ({
  runId: row.run_id,
  seq: row.seq,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  timeoutMs: row.timeout_ms,
  outcome: row.outcome,
  output: row.output_json,
  error: row.error,
  interrupted: row.interrupted,
  startedAt: row.started_at,
  endedAt: row.ended_at
})

export const RequestRow = Schema.Struct({
  request_id: Schema.String,
  run_id: Schema.String,
  node_id: Schema.String,
  attempt_id: Schema.String,
  state: Schema.Literal("open", "submitted", "closed"),
  closed_reason: Schema.NullOr(Schema.String),
  output_json: OptionalJson,
  receipt_json: Schema.NullOr(Schema.parseJson(SubmitReceipt)),
  opened_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String)
})

export const toRequest = (row: typeof RequestRow.Type): RequestRecord => ({
  requestId: row.request_id,
  runId: row.run_id,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  state: row.state,
  closedReason: row.closed_reason,
  output: row.output_json,
  receipt: row.receipt_json,
  openedAt: row.opened_at,
  endedAt: row.ended_at
})

/** Statement results, decoded before anyone reads a column. */
export const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRow))
export const decodeSteps = Schema.decodeUnknown(Schema.Array(StepRow))
export const decodeRequests = Schema.decodeUnknown(Schema.Array(RequestRow))
export const decodeToken = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ claim_token: Schema.NullOr(Schema.String) }))
)
export const decodeFlags = Schema.decodeUnknown(
  Schema.Array(
    Schema.Struct({
      pause_requested: Schema.Literal(0, 1),
      cancel_requested: Schema.NullOr(Schema.Literal("agent", "user"))
    })
  )
)

export const RunEventRow = Schema.Struct({
  run_id: Schema.String,
  seq: Schema.Number,
  kind: RunEventKind,
  message: Schema.String,
  created_at: Schema.String
})
export const decodeRunEvents = Schema.decodeUnknown(Schema.Array(RunEventRow))
export const toRunEvent = (row: typeof RunEventRow.Type): RunEvent => ({
  runId: row.run_id,
  seq: row.seq,
  kind: row.kind,
  message: row.message,
  at: row.created_at
})
