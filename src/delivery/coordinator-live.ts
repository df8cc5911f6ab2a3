/**
 * The live Coordinator over the turn-intent store, the Pi session and the abort bookkeeping.
 * Sync passes of one coordinator run one at a time; a scoped fiber runs the periodic pass.
 * Natural deliveries run concurrently and are arbitrated by store claims.
 *
 * Also `layer`, the successor-turn core in one layer (`layerCoordinator` is the Coordinator
 * alone): this Coordinator, the live SourceEvents (event policy and abort ordering) and the
 * AbortBookkeeping they share; it needs a TurnIntentStore and a PiSession. And the claim tokens
 * that name their owner process.
 */
import { createHash, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { Effect, Layer, Option, Ref } from "effect"
import { TimingPolicy, toMillis } from "../domain/timing-policy.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import * as AbortBookkeepingModule from "../interruption/abort-bookkeeping.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import * as Interruptions from "../interruption/interruptions.ts"
import type { SourceEvents } from "../interruption/source-events.ts"
import { PiSession } from "../session/pi-session.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { TurnTraces, untraced } from "../telemetry/turn-traces.ts"
import {
  Coordinator,
  type CoordinatorService,
  CrashPoints,
  FallbackComposer,
  type NaturalMessage,
  noopCrashPoints,
  type SyncTrigger
} from "./coordinator.ts"
import { fallbackMessage, syncPass } from "./fallback.ts"
import { deliverNatural } from "./natural-delivery.ts"
import {
  type DeliveryEnv,
  leaseCoversWriteDelay,
  type Unconfirmed,
  WRITE_DELAY_BOUND_MS
} from "./protocol.ts"

/** The coordinator's settings other than timings (those are `TimingPolicy` fields). */
export interface CoordinatorOptions {
  /**
   * How long Pi may take to write a sent message (default `WRITE_DELAY_BOUND_MS`, 5 s): after
   * that, a message missing from the branch of an idle session counts as lost. The policy's
   * `deliveryLease` must exceed it.
   */
  readonly writeDelayBoundMs?: number
  /** Whether a claim token names a dead owner (default: a gone process of this machine's boot). */
  readonly isDeadOwner?: (token: string) => boolean
  /** Attempts to store a resolution after a successful send (default 4). */
  readonly resolveAttempts?: number
  /** Claimant identity prefix (default one naming this process, `ownerToken`, plus a random part). */
  readonly token?: string
}

export const make = (options: CoordinatorOptions = {}) =>
  Effect.gen(function* () {
    const policy = yield* TimingPolicy
    const leaseMs = toMillis(policy.deliveryLease)
    const writeDelayBoundMs = options.writeDelayBoundMs ?? WRITE_DELAY_BOUND_MS
    if (!leaseCoversWriteDelay(leaseMs, writeDelayBoundMs)) {
      // Condition 1 of docs/protocol.md: a shorter lease lets a second claimant send a copy.
      return yield* Effect.dieMessage(
        `delivery lease (${leaseMs} ms) must exceed the write-delay bound (${writeDelayBoundMs} ms)`
      )
    }
    const env: DeliveryEnv = {
      store: yield* TurnIntentStore,
      session: yield* PiSession,
      bookkeeping: yield* AbortBookkeeping,
      token: options.token ?? ownerToken(),
      leaseMs,
      writeDelayBoundMs,
      isDeadOwner: options.isDeadOwner ?? ((token) => isDeadOwner(token)),
      claimRetryMs: toMillis(policy.claimRetry),
      resolveAttempts: options.resolveAttempts ?? 4,
      naturalInFlight: yield* Ref.make<ReadonlyMap<string, number>>(new Map()),
      nextNatural: yield* Ref.make(1),
      unconfirmed: yield* Ref.make<ReadonlyMap<string, Unconfirmed>>(new Map()),
      crashPoints: Option.getOrElse(yield* Effect.serviceOption(CrashPoints), () => noopCrashPoints),
      composeFallback: Option.match(yield* Effect.serviceOption(FallbackComposer), {
        onNone: () => (intent: TurnIntent) => Effect.succeed(fallbackMessage(intent)),
        onSome: (provided) => provided.compose
      }),
      // Shared with the trace decorator (layerTurnTrace) when the graph has it.
      traces: Option.getOrElse(yield* Effect.serviceOption(TurnTraces), () => untraced)
    }
    const serial = yield* Effect.makeSemaphore(1)
    const pass = syncPass(env)
    // Named spans with the session (and, for a natural message, the run) as attributes and log
    // annotations: a downstream tracer sees each pass and each delivery.
    const inSession = <A, E, R>(effect: Effect.Effect<A, E, R>, extra: Record<string, string> = {}) =>
      Effect.flatMap(env.session.sessionId, (sessionId) =>
        Effect.zipRight(Effect.annotateCurrentSpan({ sessionId, ...extra }), effect).pipe(
          Effect.annotateLogs({ sessionId, ...extra }),
          Effect.annotateSpans({ sessionId, ...extra })
        )
      )
    const syncFallbacks: CoordinatorService["syncFallbacks"] = Effect.fn("Coordinator.syncFallbacks")(
      (trigger: SyncTrigger) => serial.withPermits(1)(pass(trigger)),
      (effect, trigger) => inSession(effect, { trigger })
    )
    const natural = deliverNatural(env)
    const service: CoordinatorService = {
      deliverNatural: Effect.fn("Coordinator.deliverNatural")(
        (message: NaturalMessage) => natural(message),
        (effect, message) => inSession(effect, { runId: message.runId })
      ),
      syncFallbacks,
      onSettled: Effect.zipRight(env.bookkeeping.clear, syncFallbacks("settled")).pipe(
        Effect.withSpan("Coordinator.onSettled")
      ),
      onSessionStart: syncFallbacks("sessionStart").pipe(Effect.withSpan("Coordinator.onSessionStart"))
    }
    if (policy.syncInterval !== null) {
      yield* syncFallbacks("periodic").pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("periodic fallback sync failed", cause)),
        Effect.delay(policy.syncInterval),
        Effect.forever,
        Effect.forkScoped
      )
    }
    return service
  })

/** Coordinator (with its periodic sync fiber, stopped when the layer's scope closes). */
export const layerCoordinator = (
  options: CoordinatorOptions = {}
): Layer.Layer<Coordinator, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Layer.scoped(Coordinator, make(options))

// Claim tokens that name their owner process, so a restarted Pi can tell that a claim's owner
// died on this machine and take its intents at once instead of waiting out the lease.
//
// A token reads `pwt.<boot>.<pid>.<random>`: `boot` identifies this machine's current boot
// (Linux `/proc/sys/kernel/random/boot_id`, hashed), `pid` the owning process. A claim is from a
// dead owner only when its boot is this machine's and no process has that pid. Anything else (a
// token of another machine or boot, a pid reused by another process, a token in another format,
// no boot identity available) counts as alive: across machines only the lease frees a claim.

const readBootId = (): string | null => {
  try {
    const raw = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
    return raw === "" ? null : createHash("sha256").update(raw).digest("hex").slice(0, 12)
  } catch {
    return null
  }
}

let cachedBoot: string | null | undefined

/** This machine's boot identity, or null when the platform does not offer one. */
export const bootId = (): string | null => {
  if (cachedBoot === undefined) cachedBoot = readBootId()
  return cachedBoot
}

/** A fresh claimant prefix naming this process (or only random, without a boot identity). */
export const ownerToken = (pid: number = process.pid, boot: string | null = bootId()): string =>
  boot === null ? `coordinator:${randomUUID()}` : `pwt.${boot}.${pid}.${randomUUID()}`

const TOKEN = /^pwt\.([0-9a-f]{12})\.(\d{1,10})\./

/** The owner a token names, if it names one. */
export const ownerOf = (token: string): { readonly boot: string; readonly pid: number } | null => {
  const match = TOKEN.exec(token)
  if (match === null || match[1] === undefined || match[2] === undefined) return null
  return { boot: match[1], pid: Number(match[2]) }
}

/** True when no process has this pid (signal 0 probes without signalling). */
export const pidIsGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    // EPERM: a process exists but belongs to someone else.
    return typeof error === "object" && error !== null && "code" in error && error.code === "ESRCH"
  }
}

/** True when the token's owner is a process of this boot of this machine that no longer runs. */
export const isDeadOwner = (
  token: string,
  boot: string | null = bootId(),
  gone: (pid: number) => boolean = pidIsGone
): boolean => {
  const owner = ownerOf(token)
  if (owner === null || boot === null || owner.boot !== boot) return false
  if (owner.pid === process.pid) return false
  return gone(owner.pid)
}

export interface CoreOptions {
  readonly coordinator?: CoordinatorOptions
  readonly interruptions?: Interruptions.InterruptionsOptions
}

/** The successor-turn core: this Coordinator, the live SourceEvents and their AbortBookkeeping. */
export const layer = (
  options: CoreOptions = {}
): Layer.Layer<Coordinator | SourceEvents | AbortBookkeeping, never, TurnIntentStore | PiSession> =>
  Layer.merge(layerCoordinator(options.coordinator), Interruptions.layer(options.interruptions)).pipe(
    Layer.provideMerge(AbortBookkeepingModule.layer)
  )
