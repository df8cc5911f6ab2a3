/** Timing policies for tests (`TimingPolicy`, src/domain/timing-policy.ts). */
import { Layer } from "effect"
import { DEFAULT_TIMING_POLICY, TimingPolicy } from "../../src/domain/timing-policy.ts"

/** No periodic fallback pass and no periodic reconciliation: the test drives every pass itself. */
export const NoPeriodicPasses = Layer.succeed(TimingPolicy, {
  ...DEFAULT_TIMING_POLICY,
  syncInterval: null,
  maintenanceInterval: null
})
