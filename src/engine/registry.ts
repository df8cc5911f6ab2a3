/**
 * WorkflowRegistry: the loaded workflow definitions by name, each with its source fingerprint
 * and revision. `layerFromDefinitions` loads a fixed list; the Pi extension can reload from
 * discovered files through `replaceAll`.
 *
 * Also what a run keeps of its definition: the snapshot stored with each run
 * (`pi-workflows.definition-snapshot.v1`; data only: a fixed `timeoutMs: null` is written as
 * null, callbacks and other functions are omitted) and the source fingerprint that decides
 * whether a run may resume or activate (`sourceProblem`).
 */
import { createHash } from "node:crypto"
import { Context, Effect, Layer, Ref, Schema } from "effect"
import type { RunRecord } from "../store/run-store.ts"
import { DefinitionError, SourceChanged, WorkflowNotFound } from "./errors.ts"
import { canonicalJson, type LoadedWorkflow, loadWorkflow } from "./validate.ts"

export interface RegisteredWorkflow {
  readonly workflow: LoadedWorkflow
  readonly fingerprint: string
  readonly revision: number | null
  /** Where the definition came from (a file path, or "inline"). */
  readonly origin: string
}

/**
 * A definition object, or one wrapped with where it came from: the module's text (`source`) or
 * a hex SHA-256 of it (`sourceHash`, as file discovery computes it) fingerprints the run.
 */
export interface WrappedEntry {
  readonly definition: unknown
  readonly source?: string
  readonly sourceHash?: string
  readonly origin?: string
}
export type WorkflowEntry = unknown

export interface WorkflowRegistryService {
  readonly get: (name: string) => Effect.Effect<RegisteredWorkflow, WorkflowNotFound>
  readonly list: Effect.Effect<ReadonlyArray<RegisteredWorkflow>>
  /** Validate every entry, then swap the whole set at once; on any error nothing changes. */
  readonly replaceAll: (entries: ReadonlyArray<WorkflowEntry>) => Effect.Effect<void, DefinitionError>
}

export class WorkflowRegistry extends Context.Tag("pi-workflow-turns/WorkflowRegistry")<
  WorkflowRegistry,
  WorkflowRegistryService
>() {}

const isWrapped = (entry: WorkflowEntry): entry is WrappedEntry =>
  typeof entry === "object" && entry !== null && "definition" in entry && !("nodes" in entry)

const register = (entry: WorkflowEntry): Effect.Effect<RegisteredWorkflow, DefinitionError> => {
  const { definition, source, sourceHash, origin }: WrappedEntry = isWrapped(entry)
    ? entry
    : { definition: entry }
  return Effect.map(loadWorkflow(definition), (workflow) => ({
    workflow,
    fingerprint: sourceHash === undefined ? fingerprintOf(workflow, source) : `sha256:${sourceHash}`,
    revision: workflow.revision,
    origin: origin ?? "inline"
  }))
}

const loadAll = (entries: ReadonlyArray<WorkflowEntry>) =>
  Effect.gen(function* () {
    const loaded = new Map<string, RegisteredWorkflow>()
    for (const entry of entries) {
      const registered = yield* register(entry)
      const name = registered.workflow.name
      if (loaded.has(name)) {
        return yield* new DefinitionError({
          workflow: name,
          node: null,
          problem: "is defined more than once"
        })
      }
      loaded.set(name, registered)
    }
    return loaded
  })

export const make = (entries: ReadonlyArray<WorkflowEntry>) =>
  Effect.gen(function* () {
    const current = yield* Ref.make<ReadonlyMap<string, RegisteredWorkflow>>(yield* loadAll(entries))
    return WorkflowRegistry.of({
      get: (name) =>
        Effect.flatMap(Ref.get(current), (map) => {
          const found = map.get(name)
          return found === undefined
            ? Effect.fail(new WorkflowNotFound({ workflow: name, available: [...map.keys()].sort() }))
            : Effect.succeed(found)
        }),
      list: Effect.map(Ref.get(current), (map) => [...map.values()]),
      replaceAll: (next) => Effect.flatMap(loadAll(next), (map) => Ref.set(current, map))
    })
  })

/** A registry holding the given definitions; a bad definition fails the layer. */
export const layerFromDefinitions = (
  entries: ReadonlyArray<WorkflowEntry>
): Layer.Layer<WorkflowRegistry, DefinitionError> => Layer.effect(WorkflowRegistry, make(entries))

export const SNAPSHOT_SCHEMA = "pi-workflows.definition-snapshot.v1"

const NodeSnapshot = Schema.Struct({
  type: Schema.Literal("agent", "compute", "wait"),
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
      ...(node.type !== "compute" && typeof node.prompt === "string" ? { prompt: node.prompt } : {}),
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

/**
 * Whether a stored run may continue on the workflow loaded now: a run resumes or activates only
 * on the very revision and source it was created from. Pure.
 */
export const sourceProblem = (record: RunRecord, registered: RegisteredWorkflow): SourceChanged | null =>
  registered.fingerprint === record.sourceFingerprint && registered.revision === record.revision
    ? null
    : new SourceChanged({
        runId: record.runId,
        workflow: record.workflowName,
        expectedRevision: record.revision,
        foundRevision: registered.revision,
        expectedFingerprint: record.sourceFingerprint,
        foundFingerprint: registered.fingerprint
      })

/** Why a queued run cannot start now on the workflow registered under its name, if it cannot. */
export const launchCheck = (registry: WorkflowRegistryService, record: RunRecord) =>
  Effect.gen(function* () {
    const found = yield* Effect.either(registry.get(record.workflowName))
    if (found._tag === "Left")
      return { problem: `workflow "${record.workflowName}" is no longer loaded` } as const
    const changed = sourceProblem(record, found.right)
    if (changed !== null) return { problem: changed.message } as const
    const invalid = found.right.workflow.input?.(record.input) ?? null
    if (invalid !== null) return { problem: `input is invalid: ${invalid}` } as const
    return { registered: found.right } as const
  })
