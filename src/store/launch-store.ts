/**
 * LaunchStore: launch data of runs started from a terminal turn or by `restart`
 * (`workflow_run_launches`). This module is the service contract with its record types (the
 * restart lineage a launch records) and typed refusals; `launch-store-sql.ts` implements it.
 * `reserve` is the one write: inside one BEGIN IMMEDIATE transaction it checks the terminal
 * turn's reservation and the parent's restart, creates the run (the caller's effect, whose own
 * transaction becomes a savepoint) and records the launch. A repeated tool call finds its own
 * row and gets the existing run back; anything else that would be a second launch is refused,
 * and the transaction leaves nothing behind.
 */
import { Context, type Effect, Either, type Option, ParseResult, Schema } from "effect"
import type { StoreFailure } from "./store-errors.ts"

// --- Restart lineage ---------------------------------------------------------------------------
// Restart lineage: what a restarted run records about the chain it belongs to, in its launch
// data (`workflow_run_launches.launch_json`). A run without launch data is the root of its own
// chain with no restarts. Decoding is strict, so stored text that does not match is an error,
// never a half-trusted value.

/** Why a run ended, as one small closed value (a card field, a fingerprint input, a chain outcome). */
export const ReasonKind = Schema.Literal(
  "completed",
  "failed",
  "maxSteps",
  "timedOut",
  "agentCancelled",
  "userCancelled",
  "launchFailed",
  "controllerInterrupted"
)
export type ReasonKind = typeof ReasonKind.Type

export const LAUNCH_SCHEMA = "pi-workflows.run-launch.v1"

/** At most this many restarts after the original run: four runs per chain. */
export const RESTART_LIMIT = 3

/** Longest outcome summary kept per earlier run of the chain. */
export const MAX_SUMMARY_CHARS = 300

const Id = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512))

/** One earlier run of the chain as it ended (small and bounded). */
export const ChainOutcome = Schema.Struct({
  runId: Id,
  state: Schema.Literal("completed", "failed", "timed_out", "cancelled"),
  reasonKind: ReasonKind,
  fingerprint: Schema.String.pipe(Schema.maxLength(128)),
  summary: Schema.String.pipe(Schema.maxLength(MAX_SUMMARY_CHARS))
})
export type ChainOutcome = typeof ChainOutcome.Type

export const Lineage = Schema.Struct({
  rootRunId: Id,
  parentRunId: Id,
  restartNumber: Schema.Int.pipe(Schema.between(1, RESTART_LIMIT)),
  parentFingerprint: Schema.String.pipe(Schema.maxLength(128)),
  /** Every earlier run of the chain, root first; the last one is the parent. */
  earlier: Schema.Array(ChainOutcome).pipe(Schema.maxItems(RESTART_LIMIT))
})
export type Lineage = typeof Lineage.Type

/** How the run was launched: from a terminal turn's reservation, and its restart lineage. */
export const Launch = Schema.Struct({
  schema: Schema.Literal(LAUNCH_SCHEMA),
  kind: Schema.Literal("restart", "monitor", "start"),
  lineage: Schema.NullOr(Lineage)
})
export type Launch = typeof Launch.Type

const LaunchJson = Schema.parseJson(Launch)
const strict = { onExcessProperty: "error", errors: "all" } as const
const decodeEither = Schema.decodeUnknownEither(LaunchJson, strict)
const encodeSync = Schema.encodeSync(LaunchJson)

/** Stored text to launch data, or the reason it does not decode. */
export const decodeLaunch = (text: string): Either.Either<Launch, string> =>
  Either.mapLeft(decodeEither(text), (error) => ParseResult.TreeFormatter.formatErrorSync(error))

export const encodeLaunch = (launch: Launch): string => encodeSync(launch)

/** Restarts so far in the run's chain (0 for a run without lineage). */
export const restartCount = (lineage: Lineage | null): number => lineage?.restartNumber ?? 0

// --- Typed refusals of `restart` and of a second launch in one terminal turn -------------------

export const RestartRefusal = Schema.Literal(
  "unknown",
  "active",
  "otherSession",
  "userCancelled",
  "agentCancelled",
  "sourceGone",
  "limit",
  "repeated",
  "alreadyRestarted"
)
export type RestartRefusal = typeof RestartRefusal.Type

/** `restart` was refused; nothing was written. `detail` says why in words the model can act on. */
export class RestartRefused extends Schema.TaggedError<RestartRefused>()("RestartRefused", {
  runId: Schema.String,
  reason: RestartRefusal,
  detail: Schema.String
}) {
  override get message() {
    return `cannot restart run ${this.runId}: ${this.detail}`
  }
}

/** The terminal turn already reserved its one launch (another tool call made it). */
export class LaunchAlreadyReserved extends Schema.TaggedError<LaunchAlreadyReserved>()(
  "LaunchAlreadyReserved",
  {
    terminalRunId: Schema.String,
    runId: Schema.String,
    kind: Schema.String
  }
) {
  override get message() {
    return (
      `this terminal turn (run ${this.terminalRunId}) already launched run ${this.runId} (${this.kind}); ` +
      "only one workflow launch is allowed per terminal turn. End the turn; the launched run starts after it."
    )
  }
}

// --- The service -------------------------------------------------------------------------------

export type LaunchKind = Launch["kind"]

export interface LaunchRecord {
  readonly runId: string
  readonly kind: LaunchKind
  readonly parentRunId: string | null
  /** The terminal turn (its run) whose one launch this is, if made in one. */
  readonly terminalRunId: string | null
  readonly terminalIntentId: string | null
  readonly toolCallId: string | null
  readonly launch: Launch
  readonly createdAt: string
}

export interface ReserveLaunch {
  readonly kind: LaunchKind
  readonly lineage: Lineage | null
  readonly terminal: { readonly runId: string; readonly intentId: string | null } | null
  readonly toolCallId: string | null
}

export type Reserved =
  | { readonly _tag: "Created"; readonly runId: string }
  /** The same tool call already made this launch (a repeat after a crash or reload). */
  | { readonly _tag: "Existing"; readonly runId: string; readonly kind: LaunchKind }

export interface LaunchStoreService {
  readonly get: (runId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  /** The run that restarted `parentRunId`, if any. */
  readonly childOf: (parentRunId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  /** The launch the terminal turn of `terminalRunId` reserved, if any. */
  readonly byTerminal: (terminalRunId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  readonly reserve: <E, R>(
    input: ReserveLaunch,
    create: Effect.Effect<{ readonly runId: string }, E, R>
  ) => Effect.Effect<Reserved, E | LaunchAlreadyReserved | RestartRefused | StoreFailure, R>
}

export class LaunchStore extends Context.Tag("pi-workflow-turns/LaunchStore")<
  LaunchStore,
  LaunchStoreService
>() {}
