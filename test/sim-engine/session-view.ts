/**
 * The one fake Pi session as each simulated process sees it: every send is logged (for the
 * invariants), sends made while the process's `agent_settled` handlers run are written only
 * after they return (as Pi does), a dead process sends, aborts and notifies nothing, and the checker's mutations
 * (`doubleSend`, `dropFallback`) break delivery on purpose.
 */
import { Deferred, Effect } from "effect"
import type { PiSessionFakeControl } from "../../src/session/pi-session-fake.ts"
import type { CustomMessage, DeliveryOptions, PiSessionService } from "../../src/session/pi-session.ts"
import type { DeferredSend, Mutation, Process, SendLog } from "./process.ts"

const alive = (self: () => Process | null) => {
  const p = self()
  return p !== null && !p.dead
}
const killed = Effect.die(new Error("the process was killed"))

export const makeSessionView = (world: {
  readonly session: PiSessionService
  readonly fake: PiSessionFakeControl
  readonly mutation: Mutation | null
  readonly sends: Array<SendLog>
  /** A scheduling point. */
  readonly point: Effect.Effect<void>
  /** The schedule step being executed. */
  readonly step: () => number
}) => {
  const { session, fake, mutation } = world

  /** Pi writes the message to the branch (or the `dropFallback` world loses it). */
  const write = (entry: DeferredSend) =>
    Effect.gen(function* () {
      const dropped = mutation === "dropFallback" && entry.message.customType === "pi-workflows-deferred-turn"
      if (!dropped) yield* Effect.ignore(session.send(entry.message, entry.options))
      const record = (yield* fake.sent).at(-1)
      entry.log.written = !dropped && record?.message === entry.message && record.entryId !== null
    })

  const sessionOf = (self: () => Process | null): PiSessionService => {
    const deliver = (message: CustomMessage, options: DeliveryOptions) =>
      Effect.gen(function* () {
        const p = self()
        if (p === null || p.dead) return yield* killed
        const lifecycle = yield* session.lifecycle
        const id = message.details.turnIntentId
        const runId = message.details.runId
        const log: SendLog = {
          proc: p.slot,
          step: world.step(),
          customType: message.customType,
          turnIntentId: typeof id === "string" ? id : null,
          runId: typeof runId === "string" ? runId : null,
          phase: yield* fake.phase,
          userHold: lifecycle.userHold,
          shuttingDown: lifecycle.shuttingDown,
          written: false
        }
        world.sends.push(log)
        if (p.settling > 0) p.deferred.push({ message, options, log })
        else yield* write({ message, options, log })
      }).pipe(Effect.zipLeft(world.point))
    return {
      ...session,
      settling: Effect.sync(() => (self()?.settling ?? 0) > 0),
      settleDone: Effect.suspend(() => {
        const p = self()
        if (p === null || p.settling === 0) return Effect.void
        const waiter = Effect.runSync(Deferred.make<void>())
        p.settleWaiters.push(waiter)
        return Deferred.await(waiter)
      }),
      branch: Effect.zipRight(world.point, session.branch),
      // A killed process runs no code: its finalizers (a runner's interrupted visit) cannot
      // abort the turn or notify the user of the session that lives on.
      abort: Effect.suspend(() => (alive(self) ? session.abort : killed)),
      notify: (text, level) => Effect.suspend(() => (alive(self) ? session.notify(text, level) : killed)),
      send: (message, options) =>
        mutation === "doubleSend" && typeof message.details.turnIntentId === "string"
          ? Effect.zipRight(deliver(message, options), deliver(message, options))
          : deliver(message, options)
    }
  }

  return { write, sessionOf }
}
