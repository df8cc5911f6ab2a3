/**
 * The definition snapshot stored with each run (`pi-workflows.definition-snapshot.v1`) and the
 * source fingerprint that decides whether a run may resume. A snapshot is data only: a fixed
 * `timeoutMs: null` is written as null, callbacks and other functions are omitted.
 */
import { createHash } from "node:crypto"
import { Schema } from "effect"
import { canonicalJson } from "./json.ts"
import type { LoadedWorkflow } from "./validate.ts"

export const SNAPSHOT_SCHEMA = "pi-workflows.definition-snapshot.v1"

const NodeSnapshot = Schema.Struct({
  type: Schema.Literal("agent", "compute"),
  description: Schema.optional(Schema.String),
  /** String prompts only; a prompt function is omitted. */
  prompt: Schema.optional(Schema.String),
  /** Fixed limits only (a number, or null for none); default and callback limits are omitted. */
  timeoutMs: Schema.optional(Schema.NullOr(Schema.Number))
})

const EdgeSnapshot = Schema.Union(
  Schema.Struct({ from: Schema.String, to: Schema.String }),
  Schema.Struct({
    from: Schema.String,
    switch: Schema.Struct({
      on: Schema.String,
      cases: Schema.Record({ key: Schema.String, value: Schema.String }),
      default: Schema.optional(Schema.String)
    })
  })
)

export const DefinitionSnapshot = Schema.Struct({
  schema: Schema.Literal(SNAPSHOT_SCHEMA),
  name: Schema.String,
  revision: Schema.NullOr(Schema.Number),
  description: Schema.NullOr(Schema.String),
  startAt: Schema.String,
  maxSteps: Schema.Number,
  nodes: Schema.Record({ key: Schema.String, value: NodeSnapshot }),
  edges: Schema.Array(EdgeSnapshot)
})
export type DefinitionSnapshot = typeof DefinitionSnapshot.Type

/** Decode a stored snapshot strictly (unknown fields are an error). */
export const decodeSnapshot = Schema.decodeUnknown(DefinitionSnapshot, { onExcessProperty: "error" })

export const snapshotOf = (workflow: LoadedWorkflow): DefinitionSnapshot => {
  const nodes: Record<string, typeof NodeSnapshot.Type> = {}
  for (const [id, node] of workflow.nodes) {
    const source = workflow.definition.nodes[id]
    nodes[id] = {
      type: node.type,
      ...(source?.description === undefined ? {} : { description: source.description }),
      ...(node.type === "agent" && typeof node.prompt === "string" ? { prompt: node.prompt } : {}),
      ...(node.timeout._tag === "Fixed"
        ? { timeoutMs: node.timeout.ms }
        : node.timeout._tag === "None"
          ? { timeoutMs: null }
          : {})
    }
  }
  const edges = workflow.edges.map((edge) =>
    "to" in edge
      ? { from: edge.from, to: edge.to }
      : {
          from: edge.from,
          switch: {
            on: edge.switch.on,
            cases: { ...edge.switch.cases },
            ...(edge.switch.default === undefined ? {} : { default: edge.switch.default })
          }
        }
  )
  return {
    schema: SNAPSHOT_SCHEMA,
    name: workflow.name,
    revision: workflow.revision,
    description: workflow.description,
    startAt: workflow.startAt,
    maxSteps: workflow.maxSteps,
    nodes,
    edges
  }
}

const sha256 = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`

const code = (value: unknown): string | null =>
  value === undefined
    ? null
    : typeof value === "function"
      ? value.toString()
      : Schema.isSchema(value)
        ? String(value.ast)
        : null

/**
 * A stable digest of the workflow's source. With the module text it hashes that text; for a
 * definition built in code it hashes the snapshot plus the text of every function in it, so
 * editing a prompt function or a compute step changes the fingerprint too.
 */
export const fingerprintOf = (workflow: LoadedWorkflow, sourceText?: string): string => {
  if (sourceText !== undefined) return sha256(sourceText)
  const definition = workflow.definition
  const functions = Object.entries(definition.nodes).map(([id, node]) => [
    id,
    code("prompt" in node ? node.prompt : undefined),
    code("run" in node ? node.run : undefined),
    code(node.timeoutMs),
    code("output" in node ? node.output : undefined)
  ])
  return sha256(
    canonicalJson([snapshotOf(workflow), functions, code(definition.input), code(definition.presentation)])
  )
}
