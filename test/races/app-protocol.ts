/** Commands from claim-transfer-race.test.ts to its app worker processes, decoded in the worker. */
import { Schema } from "effect"

const Id = Schema.Number

export const WorkerCommand = Schema.Union(
  Schema.TaggedStruct("start", { id: Id, origin: Schema.Literal("tool", "command") }),
  Schema.TaggedStruct("activate", { id: Id }),
  Schema.TaggedStruct("resume", { id: Id, runId: Schema.String }),
  /** Hold the next prompt of `ask` at a gate. */
  Schema.TaggedStruct("hold", { id: Id }),
  /** Open the gate: build the prompt, or throw (the run fails before prompting). */
  Schema.TaggedStruct("release", { id: Id, how: Schema.Literal("prompt", "throw") }),
  /** The model answers the newest agent step of this process's branch. */
  Schema.TaggedStruct("submit", { id: Id }),
  /** The user's `/workflow cancel`. */
  Schema.TaggedStruct("userCancel", { id: Id, runId: Schema.String }),
  /** Pi's `agent_settled`. */
  Schema.TaggedStruct("settle", { id: Id, aborted: Schema.Boolean }),
  /** Pi's `session_start`. */
  Schema.TaggedStruct("sessionStart", { id: Id }),
  /** The run's state in the store. */
  Schema.TaggedStruct("run", { id: Id, runId: Schema.String }),
  /** Aborts, phase, branch and notifications of this process's session. */
  Schema.TaggedStruct("observe", { id: Id })
)
export type WorkerCommand = typeof WorkerCommand.Type

export const decodeCommand = Schema.decodeUnknownSync(Schema.parseJson(WorkerCommand))

/** Every answer: the command's id and its JSON value. */
export const Answer = Schema.Struct({ id: Schema.Number, value: Schema.Unknown })
export const decodeAnswer = Schema.decodeUnknownSync(Schema.parseJson(Answer))
