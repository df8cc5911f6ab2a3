/**
 * The delivery protocol (docs/protocol.md), in one place: the timing conditions it rests on, the
 * branch identity of resolving messages, and the one way natural delivery and fallback sync
 * send: renew the claim, send, and resolve only what the branch shows.
 *
 * Each condition, removed, lets two coordinators both send a message for one intent; the model
 * check (`npm run check:model`, model/delivery.pml) proves the protocol under them and derives
 * its constants from the values here.
 */
import { Clock, Duration, Effect, Either, Option, Ref, Schedule, Schema } from "effect"
import type { ClaimNotHeld, IntentNotFound, InvalidInput } from "../domain/errors.ts"
import { resolutionMessageId } from "../domain/identity.ts"
import { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { DEFAULT_LEASE_MS } from "../domain/timing-policy.ts"
import type { Resolution, TurnIntent } from "../domain/turn-intent.ts"
import type { AbortBookkeepingService } from "../interruption/abort-bookkeeping.ts"
import { describeError } from "../interruption/interruptions.ts"
import type {
  BranchMessage,
  CustomMessage,
  DeliveryOptions,
  PiSessionService,
  SendFailed
} from "../session/pi-session.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { TurnIntentStoreService } from "../store/turn-intent-store.ts"
import type { TurnTracesService } from "../telemetry/turn-traces.ts"
import type { CrashPointsService, NaturalKind } from "./coordinator.ts"

/**
 * Condition 1, the write-delay bound: after `send` returns, Pi writes the message into the
 * branch, or definitely loses it, within this time while the session is idle. Pi defers a send
 * from an `agent_settled` handler until the handlers return and appends it when the turn it
 * starts begins (a turn that starts keeps the session busy, and a busy session never counts a
 * message as lost). A sent message not in the branch after this long on an idle session is lost,
 * and its claim is released so it can be sent again. The lease must outlast it.
 */
export const WRITE_DELAY_BOUND_MS = 5_000

/**
 * Condition 2: no lease time passes between the last successful claim or renewal and the send.
 * Every send is preceded directly by `TurnIntentStore.renew` of its claim; natural delivery waits
 * for idle between its branch check and its send, so it must renew after that wait.
 */
export const RENEW_BEFORE_SEND = true

/**
 * Condition 3: nothing slow runs in the settle handler after a send (Pi writes the message only
 * once the handler returns). A fallback pass that claimed several intents releases the others
 * before it sends, and after the send it only looks at the branch and remembers the message.
 */
export const RELEASE_OTHERS_BEFORE_SEND = true

/**
 * Rule 4: natural delivery sends only while no `agent_settled` handler of this process runs. Pi
 * reports the session idle while its settle handlers run but holds every turn-triggering send
 * made meanwhile until they return, so a slow store call in our settle pass would hold the
 * message past the bound (or the lease) and the intent would be sent again. Natural delivery
 * waits for `PiSession.settleDone` before it renews and sends, and its gate refuses while a
 * handler runs (`PiSession.settling`, set by the extension entry before its first await).
 */
export const NATURAL_OUTSIDE_SETTLE_HANDLER = true

/** True when a lease outlasts the write-delay bound (condition 1); the coordinator refuses others. */
export const leaseCoversWriteDelay = (leaseMs: number, writeDelayBoundMs: number): boolean =>
  Number.isSafeInteger(leaseMs) &&
  Number.isSafeInteger(writeDelayBoundMs) &&
  writeDelayBoundMs > 0 &&
  leaseMs > writeDelayBoundMs

/**
 * The model's time unit and constants (scripts/check-model.ts writes them into
 * model/constants.pml). The tick is the coarsest one that keeps condition 1 strict after
 * rounding against the protocol: the model's lease is the whole ticks a lease surely lasts
 * (rounded down), its write delay the ticks Pi may take (rounded up). A coarse tick keeps the
 * state space small; rounding this way never makes the model's lease longer or Pi faster.
 */
export const modelConstants = (
  leaseMs: number = DEFAULT_LEASE_MS,
  writeDelayBoundMs: number = WRITE_DELAY_BOUND_MS
): { readonly tickMs: number; readonly lease: number; readonly writeDelay: number } => {
  for (let tickMs = leaseMs; tickMs >= 1; tickMs--) {
    const lease = Math.floor(leaseMs / tickMs)
    const writeDelay = Math.ceil(writeDelayBoundMs / tickMs)
    if (lease > writeDelay) return { tickMs, lease, writeDelay }
  }
  return { tickMs: 1, lease: leaseMs, writeDelay: writeDelayBoundMs }
}

// Branch identity of resolving messages. Every message that resolves an intent carries
// `turnIntentId` (and, for natural messages, `turnMessageId`) in its custom-message details.
// Scanning the current branch for that ID repairs a crash or store failure between a successful
// send and the stored resolution: the message is there, so the intent is resolved without
// sending again.

/** The details fields this package reads back; other fields are the sender's business. */
const TurnMark = Schema.Struct({
  turnIntentId: Schema.String,
  turnMessageId: Schema.optional(Schema.String)
})
const decodeMark = Schema.decodeUnknownOption(TurnMark)

export interface BranchMatch {
  readonly entry: BranchMessage
  /** The path the message in the branch represents. */
  readonly resolution: Resolution
}

const resolutionOf = (
  entry: BranchMessage,
  intentId: string,
  turnMessageId: string | undefined
): Resolution =>
  entry.customType === DEFERRED_TURN_TYPE
    ? "fallback"
    : turnMessageId === resolutionMessageId(intentId, "presentation")
      ? "presentation"
      : "workflowPrompt"

/** The oldest branch message that carries this intent ID, if any. */
export const findResolvingMessage = (
  branch: ReadonlyArray<BranchMessage>,
  intentId: string
): BranchMatch | null => {
  for (const entry of branch) {
    const mark = decodeMark(entry.details)
    if (Option.isSome(mark) && mark.value.turnIntentId === intentId) {
      return { entry, resolution: resolutionOf(entry, intentId, mark.value.turnMessageId) }
    }
  }
  return null
}

/** The natural message with the intent's identity added to its details. */
export const withTurnIntent = (
  message: CustomMessage,
  intentId: string,
  kind: NaturalKind
): CustomMessage => ({
  ...message,
  details: { ...message.details, turnIntentId: intentId, turnMessageId: resolutionMessageId(intentId, kind) }
})

/**
 * True when the branch entry is this very message (same type and content), not another one.
 * Pi stores what left through the redaction boundary, so both sides are compared redacted (the
 * redactor is idempotent: a stored, already redacted content compares equal).
 */
export const isSameMessage = (entry: BranchMessage, message: CustomMessage): boolean =>
  entry.customType === message.customType &&
  (entry.content === message.content ||
    (typeof entry.content === "string" && redactText(entry.content) === redactText(message.content)))

// What natural delivery and fallback sync share inside one coordinator, and the one way both send.

/** A message this coordinator sent whose intent is not resolved yet; its claim is kept. */
export interface Unconfirmed {
  readonly intent: TurnIntent
  /** The claim token that sent it, and that keeps the claim while the message is unconfirmed. */
  readonly token: string
  readonly resolution: Resolution
  /** Clock time of the send. */
  readonly sentAt: number
}

export interface DeliveryEnv {
  readonly store: TurnIntentStoreService
  readonly session: PiSessionService
  readonly bookkeeping: AbortBookkeepingService
  /** This coordinator's claimant prefix; each natural delivery and the sync get their own token. */
  readonly token: string
  readonly leaseMs: number
  /** Condition 1 (above): after this long on an idle session, an unwritten message is lost. */
  readonly writeDelayBoundMs: number
  readonly claimRetryMs: number
  readonly resolveAttempts: number
  /** True when a claim token names an owner process that is gone (`coordinator-live.ts`). */
  readonly isDeadOwner: (token: string) => boolean
  /** Runs with a natural delivery in progress, with how many. */
  readonly naturalInFlight: Ref.Ref<ReadonlyMap<string, number>>
  readonly nextNatural: Ref.Ref<number>
  /**
   * Messages sent but not yet resolved, by intent ID. Pi writes a message some time after `send`
   * returns (after the settle handlers return, when the turn starts), so the intent is resolved
   * only once the branch shows it; until then the claim is kept and renewed, and nothing sends
   * the intent again. A crash drops this memory and the claim runs out (or its dead owner is
   * recognised): the next claimant finds the message in the branch or sends it again.
   */
  readonly unconfirmed: Ref.Ref<ReadonlyMap<string, Unconfirmed>>
  /**
   * Test-only crash points (`coordinator.ts`), taken from the layer's context when it is built,
   * so they do not depend on the context of whoever calls the coordinator; the no-op otherwise.
   */
  readonly crashPoints: CrashPointsService
  /** The fallback message for an intent (the factual one, or a provided `FallbackComposer`). */
  readonly composeFallback: (intent: TurnIntent) => Effect.Effect<CustomMessage>
  /** Puts each delivery step for an intent into the trace where the intent began. */
  readonly traces: TurnTracesService
}

type ResolveError = ClaimNotHeld | IntentNotFound | InvalidInput | StoreFailure

/**
 * Store the resolution, retrying transient store failures a few times. A claim that is no
 * longer held will not come back, so that is not retried.
 */
export const resolveIntent = (
  env: DeliveryEnv,
  intent: TurnIntent,
  token: string,
  resolution: Resolution
): Effect.Effect<Either.Either<TurnIntent, ResolveError>> =>
  env.store
    .resolve({
      intentId: intent.intentId,
      token,
      resolution,
      messageId: resolutionMessageId(intent.intentId, resolution)
    })
    .pipe(
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(20)),
        times: Math.max(0, env.resolveAttempts - 1),
        while: (error) => error._tag === "StoreFailure"
      }),
      Effect.either
    )

/** The unconfirmed send of this intent by this coordinator, if any. */
export const unconfirmedOf = (env: DeliveryEnv, intentId: string): Effect.Effect<Unconfirmed | undefined> =>
  Effect.map(Ref.get(env.unconfirmed), (sent) => sent.get(intentId))

const forget = (env: DeliveryEnv, intentId: string) =>
  Ref.update(env.unconfirmed, (sent) => {
    const next = new Map(sent)
    next.delete(intentId)
    return next
  })

const remember = (env: DeliveryEnv, entry: Unconfirmed) =>
  Ref.update(env.unconfirmed, (sent) => new Map(sent).set(entry.intent.intentId, entry))

/** Give a claim back; a failure only means the lease expires on its own. */
export const releaseClaim = (env: DeliveryEnv, intent: TurnIntent, token: string): Effect.Effect<void> =>
  env.store.release({ intentId: intent.intentId, token }).pipe(Effect.ignore)

/** Extend a held claim; false when it is no longer held or the store cannot say. */
export const renewClaim = (env: DeliveryEnv, intentId: string, token: string): Effect.Effect<boolean> =>
  env.store.renew({ intentId, token, leaseMs: env.leaseMs }).pipe(Effect.orElseSucceed(() => false))

export type SendOutcome =
  /** Sent, seen in the branch and resolved. */
  | { readonly _tag: "Resolved" }
  /** Sent; resolved later, once the branch shows it (or the store takes it). */
  | { readonly _tag: "Unconfirmed"; readonly note: string | null }
  /** The claim was no longer held at the renewal: nothing was sent. */
  | { readonly _tag: "ClaimLost" }
  /**
   * Nothing was sent and the claim was released: the gate closed (the session got busy, an
   * abort started, shutdown or hold) or the renewal took so long that too little lease was left
   * to cover Pi's write (condition 1).
   */
  | { readonly _tag: "NotNow"; readonly why: string }

/**
 * Send an intent's message under its claim: renew the claim right before the send (condition
 * 2), send, and resolve only if the branch already shows the message. Otherwise the message is
 * remembered as unconfirmed with its claim kept; `confirmSent` resolves it later. Nothing slow
 * runs after the send (condition 3): a send from a settle handler is written only after the
 * handler returns.
 */
export const sendClaimed = (
  env: DeliveryEnv,
  intent: TurnIntent,
  token: string,
  resolution: Resolution,
  message: CustomMessage,
  options: DeliveryOptions,
  /** Why the message may not go out now (checked after the renewal, right before the send). */
  gate: Effect.Effect<string | null>
): Effect.Effect<SendOutcome, SendFailed> =>
  Effect.gen(function* () {
    const before = yield* Clock.currentTimeMillis
    if (!(yield* renewClaim(env, intent.intentId, token))) return { _tag: "ClaimLost" }
    // The renewal took effect at some moment after `before`: the lease lasts at least until
    // before + leaseMs, and it must still cover Pi's write delay when the send goes out.
    const slow = (yield* Clock.currentTimeMillis) - before >= env.leaseMs - env.writeDelayBoundMs
    const why = slow ? "slowRenewal" : yield* gate
    if (why !== null) {
      yield* releaseClaim(env, intent, token)
      return { _tag: "NotNow", why }
    }
    const sent = yield* Effect.either(env.session.send(message, options))
    if (Either.isLeft(sent)) {
      yield* releaseClaim(env, intent, token)
      return yield* Effect.fail(sent.left)
    }
    const sentAt = yield* Clock.currentTimeMillis
    yield* remember(env, { intent, token, resolution, sentAt })
    yield* env.crashPoints.reached("afterSend", intent.intentId)
    if (findResolvingMessage(yield* env.session.branch, intent.intentId) === null) {
      return { _tag: "Unconfirmed", note: null }
    }
    const resolved = yield* resolveIntent(env, intent, token, resolution)
    yield* env.crashPoints.reached("afterResolve", intent.intentId)
    if (Either.isRight(resolved)) {
      yield* forget(env, intent.intentId)
      return { _tag: "Resolved" }
    }
    // In the branch, but the store refused: the claim is kept (renewed by later passes) and the
    // next pass, or any later claimant, records it from the branch.
    return {
      _tag: "Unconfirmed",
      note: `sent; resolution not stored (${describeError(resolved.left)}), branch repair will record it`
    }
  })

export interface ConfirmReport {
  readonly resolved: ReadonlyArray<string>
  /** Unconfirmed past the write-delay bound on an idle session: lost, claim released. */
  readonly lost: ReadonlyArray<string>
}

/**
 * The confirmation step of every pass, for this coordinator's unconfirmed sends: resolve those
 * the branch shows; keep and renew the claim of those Pi may still write; give up (release the
 * claim, so the intent can be sent again) on those still missing after the write-delay bound
 * while the session is idle. An entry whose claim another claimant took is forgotten: that
 * claimant checks the branch before it sends.
 */
export const confirmSent = (env: DeliveryEnv, idle: boolean): Effect.Effect<ConfirmReport> =>
  Effect.gen(function* () {
    const entries = [...(yield* Ref.get(env.unconfirmed)).values()]
    const resolved: string[] = []
    const lost: string[] = []
    if (entries.length === 0) return { resolved, lost }
    const branch = yield* env.session.branch
    for (const entry of entries) {
      const { intent, token } = entry
      if (findResolvingMessage(branch, intent.intentId) !== null) {
        // Pi wrote the message after the send returned: its resolution is still the intent's trace.
        const done = yield* resolveIntent(env, intent, token, entry.resolution).pipe(
          env.traces.withIntentSpan("Coordinator.confirmSent", intent.intentId, {
            intentId: intent.intentId,
            runId: intent.runId
          })
        )
        if (Either.isRight(done)) {
          yield* forget(env, intent.intentId)
          resolved.push(intent.intentId)
          yield* env.crashPoints.reached("afterResolve", intent.intentId)
        } else if (done.left._tag !== "StoreFailure") {
          // Resolved by another claimant, or the claim is gone: nothing more to do here.
          yield* forget(env, intent.intentId)
        } else yield* renewClaim(env, intent.intentId, token)
        continue
      }
      const now = yield* Clock.currentTimeMillis
      if (idle && now - entry.sentAt > env.writeDelayBoundMs) {
        yield* forget(env, intent.intentId)
        yield* releaseClaim(env, intent, token)
        lost.push(intent.intentId)
        yield* Effect.logWarning("a sent message never reached the branch; the intent is open again", {
          intentId: intent.intentId
        })
        continue
      }
      if (!(yield* renewClaim(env, intent.intentId, token))) {
        // Only a store that refused renewals for a whole lease gets here (docs/protocol.md).
        const row = yield* Effect.either(env.store.get(intent.intentId))
        const taken =
          Either.isRight(row) && (row.right._tag === "None" || row.right.value.deliveryClaimToken !== token)
        if (taken) yield* forget(env, intent.intentId)
      }
    }
    return { resolved, lost }
  })

export const hasNaturalInFlight = (env: DeliveryEnv, runId: string): Effect.Effect<boolean> =>
  Effect.map(Ref.get(env.naturalInFlight), (runs) => (runs.get(runId) ?? 0) > 0)
