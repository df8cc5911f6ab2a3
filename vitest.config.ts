import { configDefaults, defineConfig } from "vitest/config"

/**
 * The store suites that run on both backends: the SQLite projects run every test, the
 * `postgres` project these files again with PWT_STORE_BACKEND=postgres against a throwaway
 * PostgreSQL cluster (test/pg-global-setup.ts; docs/postgres.md).
 */
export const POSTGRES_SUITES = [
  "test/store/bad-input.test.ts",
  "test/store/claims.test.ts",
  "test/store/ensure.test.ts",
  "test/store/list.test.ts",
  "test/store/resolution.test.ts",
  "test/store/postgres.test.ts",
  "test/store/postgres-timeouts.test.ts",
  "test/store/pg-migration-race.test.ts",
  "test/engine/run-store.test.ts",
  "test/store/run-adoption.test.ts",
  "test/engine/run-end.test.ts",
  "test/interruption/covered-claim-loss.test.ts",
  "test/notifications/notifications.test.ts",
  "test/notifications/app.test.ts",
  "test/conformance/conformance.test.ts",
  "test/conformance/races.test.ts",
  "test/races/intent-race.test.ts",
  "test/races/mixed-race.test.ts",
  "test/races/wait-race.test.ts",
  "test/app/tool-actions.test.ts",
  "test/app/commands-and-hooks.test.ts",
  "test/terminal/terminal-messages.test.ts",
  "test/terminal/terminal-list.test.ts",
  "test/app/claim-transfer.test.ts",
  "test/app/adoption.test.ts",
  "test/app/cross-cancel.test.ts",
  "test/app/restart.test.ts",
  "test/terminal/restart-app.test.ts",
  "test/cli/cli-pg.test.ts",
  "test/serve/timeline.test.ts",
  "test/faults/store-faults.test.ts",
  "test/faults/core-under-faults.test.ts",
  "test/faults/engine-under-lock.test.ts",
  "test/faults/engine-matrix.test.ts"
]

/** Files about PostgreSQL itself: the `postgres` project only. */
const POSTGRES_ONLY = [
  "test/store/postgres.test.ts",
  "test/store/postgres-timeouts.test.ts",
  "test/store/pg-migration-race.test.ts",
  "test/cli/cli-pg.test.ts"
]

/**
 * The SQLite suites by what they cost. `unit` is `npm test`: everything in-process (and the CLI's
 * real bin), a few minutes at most. The others run real Pi processes, kill them, race processes
 * against each other or replay seeded schedules; each has its own script (README, "Checks") and
 * all of them run in CI (`npm run coverage`, the default config's every project).
 */
const E2E = ["test/e2e/**/*.test.ts", "test/builtins/repeat-only-missing.test.ts"]
const CRASH = ["test/crash/**/*.test.ts"]
const RACES = ["test/races/**/*.test.ts", "test/faults/engine-matrix.test.ts"]
const SIM = ["test/sim/**/*.test.ts", "test/sim-engine/**/*.test.ts"]
/** Packing and installing the tarball: `npm run test:installed` (vitest.installed.config.ts). */
const INSTALLED = ["test/e2e/installed/**"]

const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: "forks"
} as const

const sqlite = (name: string, include: ReadonlyArray<string>, exclude: ReadonlyArray<string>) => ({
  test: {
    ...shared,
    name,
    include: [...include],
    exclude: [...configDefaults.exclude, ...INSTALLED, ...POSTGRES_ONLY, ...exclude],
    globalSetup: ["test/global-setup.ts"]
  }
})

export default defineConfig({
  test: {
    // Quiet on success: a test's own logs (the application's warnings, request bodies) are
    // printed only when that test fails.
    silent: "passed-only",
    projects: [
      sqlite("unit", ["test/**/*.test.ts"], [...E2E, ...CRASH, ...RACES, ...SIM]),
      sqlite("e2e", E2E, []),
      sqlite("crash", CRASH, []),
      sqlite("races", RACES, []),
      sqlite("sim", SIM, []),
      {
        test: {
          ...shared,
          name: "postgres",
          include: POSTGRES_SUITES,
          globalSetup: ["test/pg-global-setup.ts"],
          env: { PWT_STORE_BACKEND: "postgres" }
        }
      }
    ],
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      reporter: ["text-summary", "json-summary"],
      thresholds: { lines: 85 }
    }
  }
})
