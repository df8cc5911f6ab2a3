/**
 * The notification services on a real SQLite file and the fake Pi session, without the engine:
 * the raw RunStore (to create runs), the RunStore that writes finals (what the engine gets),
 * NotificationStore, Notifier and Notifications. Several kits can share one file and one session.
 */
import { Context, Effect, Layer } from "effect"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import * as FinalOnEnd from "../../src/notifications/final-on-end.ts"
import * as NotificationsLive from "../../src/notifications/notifications.ts"
import { Notifications } from "../../src/notifications/notifications.ts"
import * as NotifierLive from "../../src/notifications/notifier.ts"
import { Notifier } from "../../src/notifications/notifier.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import type { PiSession } from "../../src/session/pi-session.ts"
import { NotificationStore } from "../../src/store/notification-store.ts"
import * as NotificationStoreSql from "../../src/store/notification-store-sql.ts"
import { type NewRun, RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { sampleRun } from "../support/fixtures.ts"

export const newRun = (runId: string, sessionId = "s1"): NewRun =>
  sampleRun(runId, { targetSessionId: sessionId })

export interface KitOptions {
  readonly path?: string
  readonly sessionContext?: Context.Context<PiSession | PiSessionFake>
  readonly minIntervalMs?: number
}

export const makeKit = (options: KitOptions = {}) =>
  Effect.gen(function* () {
    const path = options.path ?? (yield* freshLocation)
    const sessionContext = options.sessionContext ?? (yield* Layer.build(layerFake({ sessionId: "s1" })))
    const stores = Layer.mergeAll(RunStoreSql.layer, NotificationStoreSql.layer).pipe(
      Layer.provideMerge(databaseLayerAt(path))
    )
    const services = NotificationsLive.layer(
      options.minIntervalMs === undefined ? {} : { minIntervalMs: options.minIntervalMs }
    ).pipe(
      Layer.provideMerge(NotifierLive.layer),
      Layer.provideMerge(stores),
      Layer.provide(Layer.succeedContext(sessionContext))
    )
    const base = yield* Layer.build(services)
    const ending = yield* Layer.build(FinalOnEnd.layer.pipe(Layer.provide(Layer.succeedContext(base))))
    const fake = Context.get(sessionContext, PiSessionFake)
    const store = Context.get(base, NotificationStore)
    return {
      path,
      sessionContext,
      fake,
      runs: Context.get(base, RunStore),
      /** The RunStore the engine gets: ends write the run's final. */
      endingRuns: Context.get(ending, RunStore),
      store,
      notifier: Context.get(base, Notifier),
      notifications: Context.get(base, Notifications),
      /** Notification messages shown so far (all sessions of the fake), oldest first. */
      shown: Effect.map(fake.sent, (sent) => sent.filter((r) => r.message.customType === NOTIFICATION_TYPE)),
      all: store.list({ limit: 1000 })
    }
  })

export type Kit = Effect.Effect.Success<ReturnType<typeof makeKit>>
