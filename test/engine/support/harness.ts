/**
 * Builds a real Engine for a test: RunStore on a temp SQLite file, a registry of the given
 * definitions, the recording coordinator and the recording SourceEvents sink. Two harnesses on
 * one file are two independent runners (separate connections, separate in-memory state).
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { SourceEvent } from "../../../src/domain/event-policy.ts"
import { Engine, type EngineConfig } from "../../../src/engine/engine.ts"
import { layer as engineLayer } from "../../../src/engine/engine-live.ts"
import { layerFromDefinitions, WorkflowRegistry, type WorkflowEntry } from "../../../src/engine/registry.ts"
import { layerRecording, SourceEvents } from "../../../src/interruption/source-events.ts"
import { RunStore } from "../../../src/store/run-store.ts"
import { layerSqlite } from "../../../src/store/run-store-sql.ts"
import * as StoreFaults from "../../../src/testing/store-faults.ts"
import { tempDbPath } from "../../support/temp-db.ts"
import { makeRecordingCoordinator } from "./fake-coordinator.ts"

export interface HarnessOptions {
  readonly definitions: ReadonlyArray<WorkflowEntry>
  readonly config?: EngineConfig
  /** Share a database file with another harness. */
  readonly filename?: string
  /** The warning `publish` returns per event (the core's "guarantee lost"); none by default. */
  readonly warning?: (event: SourceEvent) => string | null
  /** Put the RunStore behind a fault script (`faults` on the harness). */
  readonly runStoreFaults?: boolean
}

export const SESSION = "session-1"

export const makeHarness = (options: HarnessOptions) =>
  Effect.gen(function* () {
    const filename = options.filename ?? (yield* tempDbPath)
    const coordinator = yield* makeRecordingCoordinator
    const events = yield* Ref.make<ReadonlyArray<SourceEvent>>([])
    const runStore = options.runStoreFaults
      ? StoreFaults.layerRun.pipe(Layer.provide(layerSqlite({ filename })))
      : layerSqlite({ filename })
    const ports = Layer.mergeAll(
      runStore,
      layerFromDefinitions(options.definitions),
      coordinator.layer,
      options.warning === undefined
        ? layerRecording(events)
        : Layer.succeed(SourceEvents, {
            publish: (event) =>
              Ref.update(events, (all) => [...all, event]).pipe(
                Effect.as({ intentId: null, warning: options.warning?.(event) ?? null })
              )
          })
    )
    const context = yield* Layer.build(engineLayer(options.config).pipe(Layer.provideMerge(ports)))
    const engine = Context.get(context, Engine)
    return {
      filename,
      engine,
      store: Context.get(context, RunStore),
      faults: Context.getOption(context, StoreFaults.RunStoreFaults),
      registry: Context.get(context, WorkflowRegistry),
      coordinator,
      events: Ref.get(events),
      /** Start a run for SESSION and activate it; returns its ID. */
      launch: (workflow: string, input: unknown = {}, origin: "tool" | "command" = "tool") =>
        Effect.gen(function* () {
          const started = yield* engine.start({ workflow, input, sessionId: SESSION, origin })
          const active = yield* engine.activate(SESSION)
          if (Option.isNone(active)) return yield* Effect.dieMessage("nothing activated")
          return started.runId
        })
    }
  })

export type Harness = Effect.Effect.Success<ReturnType<typeof makeHarness>>

/** Tags of the events published so far, for compact assertions. */
export const eventTags = (events: ReadonlyArray<SourceEvent>) =>
  events.map((event) => {
    switch (event._tag) {
      case "ActiveTurnInterrupted":
        return `ActiveTurnInterrupted:${event.provenance.cause}${event.superseded === true ? ":superseded" : ""}`
      case "RunTerminal":
        return `RunTerminal:${event.state}`
      case "Quiet":
        return `Quiet:${event.kind}`
      default:
        return event._tag
    }
  })

/** Let other fibers and promise callbacks run until `check` holds (bounded; never sleeps on the Clock). */
export const waitUntil = (check: () => boolean, what = "condition") =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      if (check()) return
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })
