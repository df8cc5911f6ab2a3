/**
 * The application graph as `src/app/layers.ts` composes it, with both stores wrapped by the
 * store-fault kit (`StoreFaults` for turn intents, `RunStoreFaults` for runs), over the fake Pi
 * session and a real database: a SQLite file or a PostgreSQL URL (the run's backend,
 * test/support/backend.ts). For the engine-level fault matrix.
 */
import { Layer } from "effect"
import * as App from "../../src/app/layers.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { layerNoCrashPoints } from "../../src/delivery/coordinator.ts"
import type { EngineConfig } from "../../src/engine/engine.ts"
import * as EngineLive from "../../src/engine/engine-live.ts"
import { layerFromDefinitions } from "../../src/engine/registry.ts"
import * as FinalOnEnd from "../../src/notifications/final-on-end.ts"
import * as NotificationsLive from "../../src/notifications/notifications.ts"
import * as NotifierLive from "../../src/notifications/notifier.ts"
import * as TerminalMessages from "../../src/terminal/terminal-decision.ts"
import * as StoreFaults from "../../src/testing/store-faults.ts"
import { isPgLocation } from "../support/backend.ts"

export const layerAppUnderFaults = (config: {
  /** A SQLite file path or a PostgreSQL URL. */
  readonly location: string
  readonly busyTimeoutMs: number
  readonly workflows: ReadonlyArray<unknown>
  readonly engine?: EngineConfig
  readonly core?: Core.CoreOptions
}) => {
  // The later layer of a merge wins: the wrapped stores replace the plain ones.
  const stores = Layer.merge(StoreFaults.layer, StoreFaults.layerRun).pipe(
    Layer.provideMerge(
      Layer.merge(
        isPgLocation(config.location)
          ? App.layerStoresPg({ url: config.location, busyTimeoutMs: config.busyTimeoutMs })
          : App.layerStores({ filename: config.location, busyTimeoutMs: config.busyTimeoutMs }),
        layerNoCrashPoints
      )
    )
  )
  const core = Core.layer(config.core).pipe(
    Layer.provide(TerminalMessages.layerComposer),
    Layer.provideMerge(stores)
  )
  const events = App.layerSyncOnEligible.pipe(Layer.provide(core))
  const coordinator = TerminalMessages.layerCoordinator.pipe(Layer.provide(core))
  const notifier = NotifierLive.layer.pipe(Layer.provideMerge(stores))
  const notifications = NotificationsLive.layer().pipe(Layer.provideMerge(notifier))
  const runStore = FinalOnEnd.layer.pipe(Layer.provide(notifications))
  const app = EngineLive.layer(config.engine).pipe(
    Layer.provide(Layer.mergeAll(events, runStore, coordinator)),
    Layer.provideMerge(Layer.mergeAll(core, layerFromDefinitions(config.workflows), notifications))
  )
  // No periodic pass: the test drives session starts and settles itself.
  return Layer.merge(app, events)
}
