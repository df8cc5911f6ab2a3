/**
 * A scriptable in-memory Pi session for tests and downstream Effect programs. It follows the
 * Pi behaviour this package depends on (see docs/lifecycle.md):
 *
 * - a send with `triggerTurn: true` while idle starts a turn; the session stays busy until the
 *   test calls `settle` (Pi's `agent_settled`);
 * - `abort` while busy marks the turn aborting; it is still not idle until `settle`;
 * - a message sent while the turn is aborting is lost, as Pi loses a follow-up sent into an
 *   aborting turn (recorded with `entryId: null`, never added to the branch);
 * - every session ID has its own branch, so switching sessions switches branches;
 * - while a handler run through `settleHandler` is in progress (Pi's `agent_settled` handlers),
 *   the session reports idle and `settling`, and every send with `triggerTurn: true` is held
 *   until the handler returns, as Pi holds it; `settleDone` waits for that return.
 *
 * `layerFake` provides `PiSession` and the control service `PiSessionFake` from one state.
 */
import { Context, Deferred, Effect, Layer, Ref } from "effect"
import {
  type BranchMessage,
  type CustomMessage,
  type DeliveryOptions,
  type Lifecycle,
  PiSession,
  type PiSessionService,
  SendFailed
} from "./pi-session.ts"

export type TurnPhase = "idle" | "busy" | "aborting"

/**
 * One successful `send` call, in call order; a send held while a settle handler runs is
 * recorded when Pi takes it, at the handler's return.
 */
export interface SentRecord {
  readonly message: CustomMessage
  readonly options: DeliveryOptions
  /** Branch entry the message became, or null when Pi lost it (sent into an aborting turn). */
  readonly entryId: string | null
  readonly sessionId: string
  /** Session phase when the message was sent. */
  readonly phase: TurnPhase
  /** The send started a new turn (triggerTurn while idle). */
  readonly startedTurn: boolean
}

export interface Notification {
  readonly text: string
  readonly level: "info" | "warning" | "error"
}

export interface FakeOptions {
  readonly sessionId?: string
  /** Start with a running turn instead of idle. */
  readonly busy?: boolean
  /** Model Pi losing messages sent into an aborting turn (default true). */
  readonly loseSendsWhileAborting?: boolean
  /** Report Pi's interactive terminal UI (`PiSession.terminalUi`; default false, as in RPC mode). */
  readonly terminalUi?: boolean
}

export interface PiSessionFakeControl {
  /** Every successful send, oldest first. */
  readonly sent: Effect.Effect<ReadonlyArray<SentRecord>>
  /** Sends that started a turn, i.e. automatic model turns caused through this session. */
  readonly triggeredTurns: Effect.Effect<number>
  /** Send attempts that failed (scripted failures). */
  readonly failedSends: Effect.Effect<number>
  /** Custom messages of the current branch (the same view `PiSession.branch` gives). */
  readonly branch: Effect.Effect<ReadonlyArray<BranchMessage>>
  /**
   * Append a custom message straight to the branch without a send (e.g. "sent, then the
   * process crashed before the store recorded it"). Returns the entry ID.
   */
  readonly appendBranch: (message: Omit<CustomMessage, "display">) => Effect.Effect<string>
  readonly phase: Effect.Effect<TurnPhase>
  /** Start a turn as if the user prompted (idle → busy). */
  readonly startTurn: Effect.Effect<void>
  /** Pi's `agent_settled`: the session becomes idle and every `awaitIdle` waiter completes. */
  readonly settle: (options?: { readonly aborted?: boolean }) => Effect.Effect<void>
  /**
   * Run `handler` as Pi runs an `agent_settled` handler of this package: meanwhile `settling`
   * is true, `settleDone` waits, and turn-triggering sends (from any fiber) are held; they are
   * written (or lost) in order once the handler has returned, whatever its outcome.
   */
  readonly settleHandler: <A, E, R>(handler: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Turn-triggering sends held by a running settle handler, oldest first. */
  readonly heldSends: Effect.Effect<ReadonlyArray<CustomMessage>>
  /** Settles seen so far, oldest first. */
  readonly settles: Effect.Effect<ReadonlyArray<{ readonly aborted: boolean }>>
  /** Fibers currently blocked in `awaitIdle`. */
  readonly waiting: Effect.Effect<number>
  /** Fail the next `n` sends with `SendFailed`. */
  readonly failNextSends: (n: number) => Effect.Effect<void>
  /** Fail every send the predicate accepts (null clears it). */
  readonly failSendsWhen: (
    predicate: ((message: CustomMessage, options: DeliveryOptions) => boolean) | null
  ) => Effect.Effect<void>
  /** `abort` calls so far (including no-op calls while idle). */
  readonly aborts: Effect.Effect<number>
  /** Run `hook` inside every `abort` call, before it takes effect (null clears it). */
  readonly onAbort: (hook: Effect.Effect<void> | null) => Effect.Effect<void>
  readonly setShuttingDown: (value: boolean) => Effect.Effect<void>
  readonly setUserHold: (value: boolean) => Effect.Effect<void>
  /** Switch to another session ID (and its own branch). */
  readonly setSessionId: (sessionId: string) => Effect.Effect<void>
  /** Everything shown to the user through `notify`, oldest first. */
  readonly notifications: Effect.Effect<ReadonlyArray<Notification>>
  /** The footer lines `showStatus` set and did not clear, by key. */
  readonly statusLines: Effect.Effect<ReadonlyMap<string, string>>
}

export class PiSessionFake extends Context.Tag("pi-workflow-turns/PiSessionFake")<
  PiSessionFake,
  PiSessionFakeControl
>() {}

interface State {
  readonly sessionId: string
  readonly phase: TurnPhase
  readonly branches: ReadonlyMap<string, ReadonlyArray<BranchMessage>>
  readonly sent: ReadonlyArray<SentRecord>
  readonly failedSends: number
  readonly failNext: number
  readonly failWhen: ((message: CustomMessage, options: DeliveryOptions) => boolean) | null
  readonly aborts: number
  readonly abortHook: Effect.Effect<void> | null
  readonly settles: ReadonlyArray<{ readonly aborted: boolean }>
  readonly waiters: ReadonlyArray<Deferred.Deferred<void>>
  /** Settle handlers running now (`settleHandler`). */
  readonly handlers: number
  readonly handlerWaiters: ReadonlyArray<Deferred.Deferred<void>>
  readonly held: ReadonlyArray<readonly [CustomMessage, DeliveryOptions]>
  readonly lifecycle: Lifecycle
  readonly statusLines: ReadonlyMap<string, string>
  readonly notifications: ReadonlyArray<Notification>
  readonly nextEntry: number
}

const currentBranch = (state: State) => state.branches.get(state.sessionId) ?? []

const withEntry = (state: State, entry: Omit<BranchMessage, "entryId">): [string, State] => {
  const entryId = `entry-${state.nextEntry}`
  const branches = new Map(state.branches)
  branches.set(state.sessionId, [...currentBranch(state), { entryId, ...entry }])
  return [entryId, { ...state, branches, nextEntry: state.nextEntry + 1 }]
}

export const makeFake = (
  options: FakeOptions = {}
): Effect.Effect<{ readonly session: PiSessionService; readonly control: PiSessionFakeControl }> =>
  Effect.gen(function* () {
    const loseWhileAborting = options.loseSendsWhileAborting ?? true
    const state = yield* Ref.make<State>({
      sessionId: options.sessionId ?? "session-1",
      phase: options.busy === true ? "busy" : "idle",
      branches: new Map(),
      sent: [],
      failedSends: 0,
      failNext: 0,
      failWhen: null,
      aborts: 0,
      abortHook: null,
      settles: [],
      waiters: [],
      handlers: 0,
      handlerWaiters: [],
      held: [],
      lifecycle: { shuttingDown: false, userHold: false },
      statusLines: new Map(),
      notifications: [],
      nextEntry: 1
    })
    const read = <A>(f: (s: State) => A) => Ref.get(state).pipe(Effect.map(f))
    const update = (f: (s: State) => State) => Ref.update(state, f)

    /** Pi takes a sent message: written to the branch (a turn starts) or lost. */
    const take = (s: State, message: CustomMessage, deliveryOptions: DeliveryOptions): State => {
      const lost = s.phase === "aborting" && loseWhileAborting
      const startedTurn = !lost && deliveryOptions.triggerTurn && s.phase === "idle"
      const [entryId, next] = lost
        ? [null, s]
        : withEntry(s, {
            customType: message.customType,
            content: message.content,
            details: message.details
          })
      const record: SentRecord = {
        message,
        options: deliveryOptions,
        entryId,
        sessionId: s.sessionId,
        phase: s.phase,
        startedTurn
      }
      return { ...next, sent: [...next.sent, record], phase: startedTurn ? "busy" : next.phase }
    }

    const send: PiSessionService["send"] = (message, deliveryOptions) =>
      Ref.modify(state, (s): [SendFailed | null, State] => {
        if (s.failNext > 0 || (s.failWhen?.(message, deliveryOptions) ?? false)) {
          const failNext = Math.max(0, s.failNext - 1)
          const error = new SendFailed({ message: "scripted send failure" })
          return [error, { ...s, failNext, failedSends: s.failedSends + 1 }]
        }
        if (s.handlers > 0 && deliveryOptions.triggerTurn) {
          return [null, { ...s, held: [...s.held, [message, deliveryOptions] as const] }]
        }
        return [null, take(s, message, deliveryOptions)]
      }).pipe(Effect.flatMap((error) => (error === null ? Effect.void : Effect.fail(error))))

    const settleDone: PiSessionService["settleDone"] = Effect.flatMap(Deferred.make<void>(), (waiter) =>
      Ref.modify(state, (s): [Effect.Effect<void>, State] =>
        s.handlers === 0
          ? [Effect.void, s]
          : [Deferred.await(waiter), { ...s, handlerWaiters: [...s.handlerWaiters, waiter] }]
      ).pipe(Effect.flatten)
    )

    const enterHandler = update((s) => ({ ...s, handlers: s.handlers + 1 }))
    /** The last running handler returned: Pi takes the held sends, then the waiters go on. */
    const leaveHandler = Ref.modify(state, (s): [ReadonlyArray<Deferred.Deferred<void>>, State] => {
      const handlers = s.handlers - 1
      if (handlers > 0) return [[], { ...s, handlers }]
      const taken = s.held.reduce<State>((acc, [message, options]) => take(acc, message, options), {
        ...s,
        handlers,
        held: []
      })
      return [s.handlerWaiters, { ...taken, handlerWaiters: [] }]
    }).pipe(Effect.flatMap((waiters) => Effect.forEach(waiters, (w) => Deferred.succeed(w, undefined))))

    const awaitIdle: PiSessionService["awaitIdle"] = Effect.flatMap(Deferred.make<void>(), (waiter) =>
      Ref.modify(state, (s): [Effect.Effect<void>, State] =>
        s.phase === "idle"
          ? [Effect.void, s]
          : [Deferred.await(waiter), { ...s, waiters: [...s.waiters, waiter] }]
      ).pipe(Effect.flatten)
    )

    const abort: PiSessionService["abort"] = Effect.gen(function* () {
      const hook = yield* read((s) => s.abortHook)
      if (hook !== null) yield* hook
      yield* update((s) => ({ ...s, aborts: s.aborts + 1, phase: s.phase === "busy" ? "aborting" : s.phase }))
    })

    const session: PiSessionService = {
      sessionId: read((s) => s.sessionId),
      isIdle: read((s) => s.phase === "idle"),
      awaitIdle,
      settling: read((s) => s.handlers > 0),
      settleDone,
      send,
      branch: read(currentBranch),
      abort,
      lifecycle: read((s) => s.lifecycle),
      notify: (text, level) =>
        update((s) => ({ ...s, notifications: [...s.notifications, { text, level }] })),
      showStatus: (key, text) =>
        update((s) => {
          const statusLines = new Map(s.statusLines)
          if (text === undefined) statusLines.delete(key)
          else statusLines.set(key, text)
          return { ...s, statusLines }
        }),
      terminalUi: Effect.succeed(options.terminalUi === true)
    }

    const settle: PiSessionFakeControl["settle"] = (settleOptions) =>
      Ref.modify(state, (s): [ReadonlyArray<Deferred.Deferred<void>>, State] => [
        s.waiters,
        {
          ...s,
          phase: "idle",
          waiters: [],
          settles: [...s.settles, { aborted: settleOptions?.aborted ?? s.phase === "aborting" }]
        }
      ]).pipe(Effect.flatMap((waiters) => Effect.forEach(waiters, (w) => Deferred.succeed(w, undefined))))

    const control: PiSessionFakeControl = {
      sent: read((s) => s.sent),
      triggeredTurns: read((s) => s.sent.filter((r) => r.startedTurn).length),
      failedSends: read((s) => s.failedSends),
      branch: read(currentBranch),
      appendBranch: (message) =>
        Ref.modify(state, (s) =>
          withEntry(s, { customType: message.customType, content: message.content, details: message.details })
        ),
      phase: read((s) => s.phase),
      startTurn: update((s) => ({ ...s, phase: s.phase === "idle" ? "busy" : s.phase })),
      settle,
      settleHandler: (handler) =>
        Effect.acquireUseRelease(
          enterHandler,
          () => handler,
          () => leaveHandler
        ),
      heldSends: read((s) => s.held.map(([message]) => message)),
      settles: read((s) => s.settles),
      waiting: read((s) => s.waiters.length),
      failNextSends: (n) => update((s) => ({ ...s, failNext: Math.max(0, Math.trunc(n)) })),
      failSendsWhen: (predicate) => update((s) => ({ ...s, failWhen: predicate })),
      aborts: read((s) => s.aborts),
      onAbort: (hook) => update((s) => ({ ...s, abortHook: hook })),
      setShuttingDown: (value) =>
        update((s) => ({ ...s, lifecycle: { ...s.lifecycle, shuttingDown: value } })),
      setUserHold: (value) => update((s) => ({ ...s, lifecycle: { ...s.lifecycle, userHold: value } })),
      setSessionId: (sessionId) => update((s) => ({ ...s, sessionId })),
      notifications: read((s) => s.notifications),
      statusLines: read((s) => s.statusLines)
    }
    return { session, control }
  })

/** `PiSession` backed by the fake, plus its `PiSessionFake` control. */
export const layerFake = (options: FakeOptions = {}): Layer.Layer<PiSession | PiSessionFake> =>
  Layer.effectContext(
    Effect.map(makeFake(options), ({ session, control }) =>
      Context.make(PiSession, session).pipe(Context.add(PiSessionFake, control))
    )
  )
