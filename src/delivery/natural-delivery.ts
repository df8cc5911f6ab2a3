/**
 * Natural delivery: a workflow prompt or result presentation resolves its run's pending intent.
 *
 * - No pending intent (and no system abort in flight): the message is sent unchanged, at once.
 * - A system abort in flight: wait for the turn to settle first, even without an intent, so no
 *   prompt produced during abort handling is sent into the aborting turn (Pi would lose it).
 * - A pending intent: wait for settle or verified idle, claim it for this run and session,
 *   look for its message in the branch (repair), else add `turnIntentId`, send and resolve.
 *   A failed send releases the claim and fails.
 * - The intent held by another live claimant: retry the claim until the lease bound passes;
 *   if it gets resolved meanwhile, or the bound passes, the message is sent without it.
 *
 * A `once` message whose copy the branch already holds is not sent again, and a message its sender
 * withdrew (`stillWanted`) is not sent at all: both asked at the start and again right before
 * each send, since the waits between take seconds (nothing else changes; a claim is released).
 *
 * The message itself is never silently dropped: whatever happens to the bookkeeping, it is
 * either sent or found in the branch. The exception is a message bound to its intent
 * (`turnIntentId`, a completed run's presentation): it goes out only through that intent, so
 * where a plain message would be sent without it, it is not sent at all; the intent's fallback
 * (or the message that already resolved it) is the run's one terminal turn.
 */
import { Clock, Effect, Either, Option, Ref } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import { checkId } from "../domain/identity.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { describeError } from "../interruption/interruptions.ts"
import type { SendFailed } from "../session/pi-session.ts"
import type { NaturalMessage, NaturalReceipt } from "./coordinator.ts"
import {
  type DeliveryEnv,
  findResolvingMessage,
  isSameMessage,
  releaseClaim,
  resolveIntent,
  sendClaimed,
  unconfirmedOf,
  withTurnIntent
} from "./protocol.ts"

type Step =
  | { readonly _tag: "Done"; readonly receipt: NaturalReceipt }
  | { readonly _tag: "Repaired" }
  /** The claim was taken over before the send: nothing was sent; look again. */
  | { readonly _tag: "Retry" }

/**
 * Pi loses a message sent into an aborting turn. Checked right before every send too, because a
 * system abort can start while this delivery waits for a claim or for a slow store.
 */
const outsideAbort = (env: DeliveryEnv): Effect.Effect<void> =>
  Effect.flatMap(env.bookkeeping.inFlight, (ids) => (ids.length > 0 ? env.session.awaitIdle : Effect.void))

/**
 * A message with an intent goes out only into an idle session, so Pi writes it promptly (and
 * not into a turn that an abort stops: an aborting turn is not idle either), and only while no
 * `agent_settled` handler of ours runs (rule 4): Pi holds a send made then until the handler
 * returns, and a slow store call there would hold it past the claim's lease.
 */
const naturalGate = (env: DeliveryEnv): Effect.Effect<string | null> =>
  Effect.gen(function* () {
    if (!(yield* env.session.isIdle)) return "busy"
    return (yield* env.session.settling) ? "settling" : null
  })

const requestIdOf = (details: unknown): unknown =>
  typeof details === "object" && details !== null && "requestId" in details ? details.requestId : undefined

/** A `once` message whose copy (same type, same request ID) the branch already holds. */
const alreadyInBranch = (env: DeliveryEnv, natural: NaturalMessage): Effect.Effect<boolean> =>
  natural.once !== true
    ? Effect.succeed(false)
    : Effect.map(env.session.branch, (branch) => {
        const requestId = requestIdOf(natural.message.details)
        return (
          requestId !== undefined &&
          branch.some(
            (entry) =>
              entry.customType === natural.message.customType && requestIdOf(entry.details) === requestId
          )
        )
      })

/**
 * Why this message is not to go out now, asked right before each send: its copy is in the
 * branch (another delivery, maybe in another process, wrote it meanwhile), or its sender
 * withdrew it. Null: send.
 */
const withheld = (env: DeliveryEnv, natural: NaturalMessage): Effect.Effect<string | null> =>
  Effect.gen(function* () {
    if (yield* alreadyInBranch(env, natural)) return "already in the branch"
    if (natural.stillWanted !== undefined && !(yield* natural.stillWanted))
      return "withdrawn: no longer wanted"
    return null
  })

const sendPlain = (
  env: DeliveryEnv,
  natural: NaturalMessage,
  note: string | null
): Effect.Effect<NaturalReceipt, SendFailed> =>
  natural.turnIntentId !== undefined
    ? Effect.succeed({
        turnIntentId: null,
        sent: false,
        note: `not sent: it answers only turn intent ${natural.turnIntentId}${note === null ? "" : ` (${note})`}`
      })
    : Effect.gen(function* () {
        yield* outsideAbort(env)
        const reason = yield* withheld(env, natural)
        if (reason !== null) return { turnIntentId: null, sent: false, note: reason }
        yield* env.session.send(natural.message, natural.options)
        return { turnIntentId: null, sent: true, note }
      })

/**
 * The intent store could not say which intent this message answers: a workflow prompt that
 * answers its runner's outstanding abort carries that abort's identity anyway (the branch is
 * the record; branch repair resolves the intent from it), else it goes plain. It goes plain too
 * when the branch already holds a message of that intent: a new owner whose predecessor's prompt
 * answered the abort (and died before clearing it) must not give one intent a second message.
 */
const sendUnbooked = (
  env: DeliveryEnv,
  natural: NaturalMessage,
  note: string
): Effect.Effect<NaturalReceipt, SendFailed> =>
  Effect.gen(function* () {
    const answers = natural.turnIntentId === undefined ? natural.answers : undefined
    if (answers === undefined) return yield* sendPlain(env, natural, note)
    if (findResolvingMessage(yield* env.session.branch, answers) !== null)
      return yield* sendPlain(env, natural, `${note}; turn intent ${answers} already has its message`)
    return yield* sendPlain(
      env,
      { ...natural, message: withTurnIntent(natural.message, answers, natural.kind) },
      `${note}; it carries turn intent ${answers}, which branch repair resolves`
    )
  })

/** Deliver through a claimed intent: repair from the branch, or send with the intent's identity. */
const throughIntent = (
  env: DeliveryEnv,
  natural: NaturalMessage,
  intent: TurnIntent,
  token: string
): Effect.Effect<Step, SendFailed> =>
  Effect.gen(function* () {
    const match = findResolvingMessage(yield* env.session.branch, intent.intentId)
    if (match !== null) {
      const resolved = yield* resolveIntent(env, intent, token, match.resolution)
      if (match.resolution !== "fallback" && isSameMessage(match.entry, natural.message)) {
        const note = Either.isLeft(resolved)
          ? `found in the branch; resolution not stored (${describeError(resolved.left)})`
          : null
        return { _tag: "Done", receipt: { turnIntentId: intent.intentId, sent: false, note } }
      }
      // Another message already satisfied this intent: record that, then deliver this one.
      if (Either.isLeft(resolved)) yield* releaseClaim(env, intent, token)
      return { _tag: "Repaired" }
    }
    // Waiting takes lease time: the claim is renewed after it, right before the send. A settle
    // pass that is running (or starts during the renewal: the gate) holds this send (rule 4).
    yield* env.session.awaitIdle
    yield* env.session.settleDone
    const reason = yield* withheld(env, natural)
    if (reason !== null) {
      // The intent stays pending for the message that is wanted (the next prompt, or a fallback).
      yield* releaseClaim(env, intent, token)
      return { _tag: "Done", receipt: { turnIntentId: null, sent: false, note: reason } }
    }
    const outcome = yield* sendClaimed(
      env,
      intent,
      token,
      natural.kind,
      withTurnIntent(natural.message, intent.intentId, natural.kind),
      natural.options,
      naturalGate(env)
    )
    if (outcome._tag === "ClaimLost" || outcome._tag === "NotNow") return { _tag: "Retry" }
    const note = outcome._tag === "Unconfirmed" ? outcome.note : null
    return { _tag: "Done", receipt: { turnIntentId: intent.intentId, sent: true, note } }
  })

const deliver = (
  env: DeliveryEnv,
  natural: NaturalMessage,
  token: string
): Effect.Effect<NaturalReceipt, SendFailed> =>
  Effect.gen(function* () {
    const reason = yield* withheld(env, natural)
    if (reason !== null) return { turnIntentId: null, sent: false, note: reason }
    let waited = false
    // Set at the first claim held by someone else: a live claim ends within one lease.
    let deadline: number | null = null
    const repaired = new Set<string>()
    const freed = new Set<string>()
    while (true) {
      // Checked on every pass (not only the first): a system abort can start while this
      // delivery waits for a claim.
      if ((yield* env.bookkeeping.inFlight).length > 0) {
        yield* env.session.awaitIdle
        waited = true
      }
      const sessionId = yield* env.session.sessionId
      const pending = yield* Effect.either(
        env.store.list({ runId: natural.runId, targetSessionId: sessionId, state: "pending", limit: 1 })
      )
      if (Either.isLeft(pending)) {
        return yield* sendUnbooked(env, natural, `turn intents unavailable (${describeError(pending.left)})`)
      }
      if (pending.right.length === 0) {
        return yield* sendPlain(
          env,
          natural,
          natural.turnIntentId === undefined ? null : "it is resolved already, or was never stored"
        )
      }
      const owed = pending.right[0]
      if (owed !== undefined && (yield* unconfirmedOf(env, owed.intentId)) !== undefined) {
        // This coordinator already sent the intent's message and Pi has not written it yet: that
        // message answers the intent; this one goes on its own, never as a second copy.
        return yield* sendPlain(env, natural, `turn intent ${owed.intentId} already has its message`)
      }
      if (!waited) {
        // The old turn may still be running or aborting: look again once it has settled.
        yield* env.session.awaitIdle
        waited = true
        continue
      }
      const claimed = yield* Effect.either(
        env.store.claimForRun({
          runId: natural.runId,
          targetSessionId: sessionId,
          token,
          leaseMs: env.leaseMs
        })
      )
      if (Either.isLeft(claimed)) {
        return yield* sendUnbooked(env, natural, `turn intent claim failed (${describeError(claimed.left)})`)
      }
      if (Option.isNone(claimed.right)) {
        const holder = owed?.deliveryClaimToken ?? null
        if (owed !== undefined && holder !== null && !freed.has(holder) && env.isDeadOwner(holder)) {
          freed.add(holder)
          // Its claimant died on this machine: free the claim and claim again at once.
          yield* env.store.release({ intentId: owed.intentId, token: holder }).pipe(Effect.ignore)
          continue
        }
        const now = yield* Clock.currentTimeMillis
        deadline ??= now + env.leaseMs + env.claimRetryMs
        if (now >= deadline) {
          const held = pending.right[0]?.intentId ?? "?"
          return yield* sendPlain(env, natural, `turn intent ${held} stayed claimed by another claimant`)
        }
        yield* Effect.sleep(env.claimRetryMs)
        continue
      }
      const intent = claimed.right.value
      yield* env.crashPoints.reached("afterClaim", intent.intentId)
      if (repaired.has(intent.intentId)) {
        // Its repair could not be stored; do not loop on it, deliver the message itself.
        yield* releaseClaim(env, intent, token)
        return yield* sendPlain(env, natural, `turn intent ${intent.intentId} could not be repaired`)
      }
      // In the trace where the intent began, linked to this delivery's own span.
      const step = yield* throughIntent(env, natural, intent, token).pipe(
        env.traces.withIntentSpan("Coordinator.deliverThroughIntent", intent.intentId, {
          intentId: intent.intentId,
          runId: natural.runId,
          kind: natural.kind
        })
      )
      if (step._tag === "Done") return step.receipt
      if (step._tag === "Repaired") repaired.add(intent.intentId)
    }
  })

export const deliverNatural =
  (env: DeliveryEnv) =>
  (natural: NaturalMessage): Effect.Effect<NaturalReceipt, SendFailed | InvalidInput> =>
    Effect.gen(function* () {
      yield* checkId("runId", natural.runId)
      const token = `${env.token}:natural:${yield* Ref.getAndUpdate(env.nextNatural, (n) => n + 1)}`
      const track = (delta: number) =>
        Ref.update(env.naturalInFlight, (runs) => {
          const next = new Map(runs)
          const count = (runs.get(natural.runId) ?? 0) + delta
          if (count > 0) next.set(natural.runId, count)
          else next.delete(natural.runId)
          return next
        })
      return yield* Effect.acquireUseRelease(
        track(1),
        () => deliver(env, natural, token),
        () => track(-1)
      )
    })
