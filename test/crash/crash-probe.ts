/**
 * Child-process probe for crash-points.test.ts: reaches every crash point in order with the
 * env-built service and prints each point it survived.
 */
import { Effect } from "effect"
import {
  CRASH_POINTS,
  layerCrashPointsFromEnv as layerFromEnv,
  reachCrashPoint as reach
} from "../../src/delivery/coordinator.ts"

const program = Effect.forEach(CRASH_POINTS, (point) =>
  Effect.zipRight(
    reach(point, "intent-1"),
    Effect.sync(() => process.stdout.write(`${point}\n`))
  )
)
await Effect.runPromise(program.pipe(Effect.provide(layerFromEnv)))
