/**
 * Crash points: a test-only hook that lets the crash-recovery tests kill Pi (SIGKILL) at an
 * exact step of a delivery, then restart it on the same session file. The coordinator takes the
 * service from its layer's context when it is built and calls `reached(point, intentId)` after it
 * claimed an intent, after it sent the resolving message and after it stored the resolution.
 * Without a `CrashPoints` service (the normal case), or without `PI_WORKFLOW_TURNS_CRASH_AT` in
 * the environment, nothing happens.
 *
 * `PI_WORKFLOW_TURNS_CRASH_AT=afterClaim|afterSend|afterResolve` is for tests only
 * (docs/reliability.md): the process kills itself the first time it reaches that point. Two
 * more values, `beforeSuccessorRequest` and `afterSuccessorRequest`, are reached around a model
 * request for a terminal successor instead (`extension/model-request.ts`).
 */
import { Context, Effect, Layer, Option } from "effect"
import { CRASH_AT_ENV } from "./crash-env.ts"

export { CRASH_AT_ENV }

export type CrashPoint = "afterClaim" | "afterSend" | "afterResolve"

export const CRASH_POINTS: ReadonlyArray<CrashPoint> = ["afterClaim", "afterSend", "afterResolve"]

export interface CrashPointsService {
  /** Called when a delivery reaches `point` for `intentId`. */
  readonly reached: (point: CrashPoint, intentId: string) => Effect.Effect<void>
}

export class CrashPoints extends Context.Tag("pi-workflow-turns/CrashPoints")<
  CrashPoints,
  CrashPointsService
>() {}

export const noop: CrashPointsService = { reached: () => Effect.void }

/** SIGKILL this process at the point the variable names; the no-op when it is unset or unknown. */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): CrashPointsService => {
  const target = CRASH_POINTS.find((point) => point === env[CRASH_AT_ENV])
  if (target === undefined) return noop
  return {
    reached: (point) =>
      point === target
        ? Effect.sync(() => {
            process.kill(process.pid, "SIGKILL")
          })
        : Effect.void
  }
}

export const layerNoop: Layer.Layer<CrashPoints> = Layer.succeed(CrashPoints, noop)

export const layerFromEnv: Layer.Layer<CrashPoints> = Layer.sync(CrashPoints, () => fromEnv(process.env))

/** What delivery code calls: the service in context, if any, reaches the point. */
export const reach = (point: CrashPoint, intentId: string): Effect.Effect<void> =>
  Effect.flatMap(
    Effect.serviceOption(CrashPoints),
    Option.match({ onNone: () => Effect.void, onSome: (crash) => crash.reached(point, intentId) })
  )
