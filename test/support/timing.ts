/** Timing policies for tests (`TimingPolicy`, src/domain/timing-policy.ts). */
import { Layer } from "effect"
import {
  DEFAULT_TIMING_POLICY,
  TimingPolicy,
  type TimingPolicyService
} from "../../src/domain/timing-policy.ts"

/** The default policy with these fields replaced, as a layer to provide under the core or app. */
export const withTimings = (timings: Partial<TimingPolicyService>): Layer.Layer<TimingPolicy> =>
  Layer.succeed(TimingPolicy, { ...DEFAULT_TIMING_POLICY, ...timings })

/** No periodic fallback pass: the test drives every fallback pass itself. */
export const NoSyncPass = withTimings({ syncInterval: null })

/** No periodic fallback pass and no periodic reconciliation: the test drives every pass itself. */
export const NoPeriodicPasses = withTimings({ syncInterval: null, maintenanceInterval: null })
