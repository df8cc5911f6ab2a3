/**
 * WorkflowRegistry: the loaded workflow definitions by name, each with its source fingerprint
 * and revision. `layerFromDefinitions` loads a fixed list; the Pi extension can reload from
 * discovered files through `replaceAll`.
 */
import { Context, Effect, Layer, Ref } from "effect"
import { DefinitionError, WorkflowNotFound } from "./errors.ts"
import { fingerprintOf } from "./snapshot.ts"
import { type LoadedWorkflow, loadWorkflow } from "./validate.ts"

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
