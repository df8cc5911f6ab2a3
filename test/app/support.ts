/** The whole app over the fake Pi session and a real SQLite file, for app-level tests. */
import { Effect, Layer, Schedule } from "effect"
import * as App from "../../src/app/layers.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { freshLocation, isPgLocation } from "../support/backend.ts"
import { crashing } from "../support/workflows.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

export const STEP = "pi-workflows-agent-step"
export const PRESENTATION = "pi-workflows-presentation"
export const FALLBACK = "pi-workflows-deferred-turn"

/** The spans one agent self-cancel's trace holds, from the tool call to its fallback's resolve. */
export const SELF_CANCEL_SPANS = [
  "Engine.cancel",
  "Interruptions.abortActiveTurn",
  "TurnIntentStore.ensure",
  "TurnIntentStore.makeEligible",
  "Coordinator.sendFallback",
  "TurnIntentStore.renew",
  "TurnIntentStore.resolve"
]

export const greet = {
  name: "greet",
  description: "say hello",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Say hello." } },
  edges: []
}

export const crashFirst = crashing("scope must be a non-empty string")

/** The app on a fresh database of the test backend, with the fake session; the layer's scope owns both. */
export const buildApp = (workflows: ReadonlyArray<unknown> = [greet, crashFirst]) =>
  Layer.unwrapScoped(
    Effect.map(freshLocation, (location) =>
      App.layer({
        database: isPgLocation(location) ? { url: location } : { filename: location },
        workflows
      }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
    )
  )

/** Poll until `check` passes (real clock; fibers get time to run), failing after ~3 s. */
export const eventually = <A, R>(effect: Effect.Effect<A, never, R>, check: (a: A) => boolean) =>
  effect.pipe(
    Effect.filterOrFail(check, () => new Error("condition not reached")),
    Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("3 seconds"))),
    Effect.orDie
  )

export const sentOfType = (customType: string) =>
  Effect.map(
    Effect.flatMap(PiSessionFake, (fake) => fake.sent),
    (sent) => sent.filter((record) => record.message.customType === customType)
  )

/** The requestId of the newest agent-step message sent. */
export const lastRequestId = Effect.map(sentOfType(STEP), (steps) => {
  const details = steps.at(-1)?.message.details
  const requestId = details?.requestId
  if (typeof requestId !== "string") throw new Error("no agent step sent")
  return requestId
})

/** One app instance of a session: its whole context, to run tool actions and commands in. */
export const sessionApp = (
  location: string,
  sessionId: string,
  workflows: ReadonlyArray<unknown> = [greet, crashFirst]
) =>
  Layer.build(
    App.layer({
      database: isPgLocation(location) ? { url: location } : { filename: location },
      workflows,
      // Renewals come often, so a cancel request written by anyone is seen within ~100 ms.
      engine: { leaseMs: 2_000, renewEveryMs: 100 }
    }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId })))
  )
