/**
 * Restart lineage: what a restarted run records about the chain it belongs to, in its launch
 * data (`workflow_run_launches.launch_json`). A run without launch data is the root of its own
 * chain with no restarts. Decoding is strict, so stored text that does not match is an error,
 * never a half-trusted value.
 */
import { Either, ParseResult, Schema } from "effect"
import { REASON_KINDS, type ReasonKind } from "./terminal-outcome.ts"

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
  reasonKind: Schema.Literal(...(REASON_KINDS as [ReasonKind, ...ReasonKind[]])),
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
