/**
 * Typed errors of the workflow engine. None of those its operations return means that something
 * durable changed: the engine checks first and writes after. The last two stay inside a run (a
 * visit whose timeout callback failed, an abort whose provenance write was late).
 */
import { Schema } from "effect"

/** A workflow definition is malformed; reported when the definition is loaded. */
export class DefinitionError extends Schema.TaggedError<DefinitionError>()("DefinitionError", {
  workflow: Schema.String,
  node: Schema.NullOr(Schema.String),
  problem: Schema.String
}) {
  override get message() {
    const where = this.node === null ? "" : `, node "${this.node}"`
    return `workflow "${this.workflow}"${where}: ${this.problem}`
  }
}

/** At most this many names of the loaded workflows are listed in the message. */
const LISTED_WORKFLOWS = 20

export class WorkflowNotFound extends Schema.TaggedError<WorkflowNotFound>()("WorkflowNotFound", {
  workflow: Schema.String,
  /** The names of the workflows that are loaded. */
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    const name = JSON.stringify(this.workflow.length <= 80 ? this.workflow : `${this.workflow.slice(0, 79)}…`)
    if (this.available.length === 0) return `no workflow named ${name} is loaded (none are)`
    const listed = this.available.slice(0, LISTED_WORKFLOWS).join(", ")
    const more =
      this.available.length > LISTED_WORKFLOWS ? `, and ${this.available.length - LISTED_WORKFLOWS} more` : ""
    return `no workflow named ${name} is loaded; the loaded workflows are: ${listed}${more}`
  }
}

/** The run input is not JSON or the workflow's `input` check rejected it. */
export class InvalidWorkflowInput extends Schema.TaggedError<InvalidWorkflowInput>()("InvalidWorkflowInput", {
  workflow: Schema.String,
  problem: Schema.String,
  /** An input the workflow accepts (its schema's required fields), when it has an input schema. */
  example: Schema.optionalWith(Schema.Unknown, { default: () => null })
}) {
  override get message() {
    const example =
      this.example === null ? "" : `; an input it accepts looks like ${JSON.stringify(this.example)}`
    return `input of workflow "${this.workflow}" is invalid: ${this.problem}${example}`
  }
}

/** The action does not apply to the run in its current state. */
export class InvalidRunState extends Schema.TaggedError<InvalidRunState>()("InvalidRunState", {
  runId: Schema.String,
  state: Schema.String,
  action: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `cannot ${this.action} run ${this.runId} (${this.state}): ${this.problem}`
  }
}

/** Another runner holds a live claim on the run. */
export class RunBusy extends Schema.TaggedError<RunBusy>()("RunBusy", { runId: Schema.String }) {
  override get message() {
    return `run ${this.runId} is held by another runner whose lease has not expired`
  }
}

/**
 * `/workflow resume` of another session's run that is live elsewhere: a process holds its claim
 * (`runner`: the owner its claim token names, when it names one) or is delivering one of its
 * successor messages (`delivery`). Nothing was changed.
 */
export class RunLiveElsewhere extends Schema.TaggedError<RunLiveElsewhere>()("RunLiveElsewhere", {
  runId: Schema.String,
  ownerSessionId: Schema.String,
  live: Schema.Literal("runner", "delivery"),
  ownerHost: Schema.NullOr(Schema.String),
  ownerPid: Schema.NullOr(Schema.Number),
  /** When the owner's lease runs out unless it renews it (ISO 8601), if known. */
  leaseUntil: Schema.NullOr(Schema.String)
}) {
  override get message() {
    const where = `session ${this.ownerSessionId}`
    if (this.live === "delivery") {
      return (
        `run ${this.runId} cannot be adopted right now: a message of the run is being delivered to ${where}; ` +
        "try again in a few seconds. Nothing was changed."
      )
    }
    const process =
      this.ownerPid === null
        ? "another Pi process"
        : `Pi process ${this.ownerPid}${this.ownerHost === null ? "" : ` on host ${this.ownerHost}`}`
    const lease =
      this.leaseUntil === null
        ? ""
        : ` (its claim's lease runs to ${this.leaseUntil} and is renewed while it runs)`
    return (
      `run ${this.runId} is live in ${where}, run by ${process}${lease}; it cannot be adopted while it runs there. ` +
      `Continue it in that session, or quit that Pi (the run is parked) and run /workflow resume ${this.runId} here again. ` +
      "Nothing was changed."
    )
  }
}

/** The workflow changed since the run was created; the run refuses to resume or activate. */
export class SourceChanged extends Schema.TaggedError<SourceChanged>()("SourceChanged", {
  runId: Schema.String,
  workflow: Schema.String,
  expectedRevision: Schema.NullOr(Schema.Number),
  foundRevision: Schema.NullOr(Schema.Number),
  expectedFingerprint: Schema.String,
  foundFingerprint: Schema.String
}) {
  override get message() {
    const what =
      this.expectedRevision !== this.foundRevision
        ? `revision changed from ${this.expectedRevision ?? "none"} to ${this.foundRevision ?? "none"}`
        : "its source changed"
    // A built-in changes with the installed package, so the usual fix is a Pi reload, then a new run.
    return (
      `run ${this.runId} of workflow "${this.workflow}" cannot continue: ${what} since the run started. ` +
      "Reload Pi (or restart it) so every session loads the current definition, then start a new run"
    )
  }
}

export const SubmitRejection = Schema.Literal(
  "unknown",
  "stale",
  "crossRun",
  "duplicate",
  "invalidOutput",
  "notActive",
  "waitRequest"
)
export type SubmitRejection = typeof SubmitRejection.Type

/** A `submit` was refused; nothing changed and an open request stays open. */
export class SubmitRejected extends Schema.TaggedError<SubmitRejected>()("SubmitRejected", {
  requestId: Schema.String,
  reason: SubmitRejection,
  detail: Schema.String
}) {
  override get message() {
    return `submission for request ${this.requestId} rejected (${this.reason}): ${this.detail}`
  }
}

/** Why an answer to a waiting checkpoint was refused. */
export const AnswerRejection = Schema.Literal(
  "unknown",
  "notWait",
  "crossRun",
  "answered",
  "closed",
  "invalidAnswer"
)
export type AnswerRejection = typeof AnswerRejection.Type

/** An answer was refused; nothing changed and the run still waits (if it did). */
export class AnswerRejected extends Schema.TaggedError<AnswerRejected>()("AnswerRejected", {
  requestId: Schema.String,
  reason: AnswerRejection,
  detail: Schema.String
}) {
  override get message() {
    return `answer for request ${this.requestId} rejected (${this.reason}): ${this.detail}`
  }
}

/** How long a `timeoutMs` callback may take to produce its value (`timeout.ts` enforces it). */
export const TIMEOUT_CALLBACK_LIMIT_MS = 30_000

/**
 * A `timeoutMs` callback did not give a limit: it threw, its promise rejected, it took longer
 * than `TIMEOUT_CALLBACK_LIMIT_MS`, or it returned something that is not a limit (`detail`
 * says what: the thrown message, the rejection, or the value's problem).
 */
export class TimeoutCallbackFailed extends Schema.TaggedError<TimeoutCallbackFailed>()(
  "TimeoutCallbackFailed",
  {
    reason: Schema.Literal("threw", "rejected", "tooSlow", "invalidValue"),
    detail: Schema.String
  }
) {
  override get message() {
    const what = {
      threw: `threw: ${this.detail}`,
      rejected: `rejected: ${this.detail}`,
      tooSlow: `did not resolve within ${TIMEOUT_CALLBACK_LIMIT_MS / 1000} s`,
      invalidValue: `returned an invalid value: ${this.detail}`
    }
    return `timeoutMs callback ${what[this.reason]}`
  }
}

/** An abort's provenance write did not answer within its bound; terminal handling retries it. */
export class ProvenanceNotStored extends Schema.TaggedError<ProvenanceNotStored>()("ProvenanceNotStored", {
  runId: Schema.String,
  boundMs: Schema.Number
}) {
  override get message() {
    return `workflow run ${this.runId}: provenance not stored within ${this.boundMs} ms`
  }
}
