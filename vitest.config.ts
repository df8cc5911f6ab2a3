import { configDefaults, defineConfig } from "vitest/config"

/**
 * The store suites that run on both backends: the `sqlite` project runs every test, the
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
  "test/interruption/covered-claim-loss.test.ts",
  "test/notifications/notifications.test.ts",
  "test/notifications/app.test.ts",
  "test/conformance/conformance.test.ts",
  "test/conformance/races.test.ts",
  "test/races/intent-race.test.ts",
  "test/races/mixed-race.test.ts",
  "test/app/tool-actions.test.ts",
  "test/app/commands-and-hooks.test.ts",
  "test/terminal/terminal-messages.test.ts",
  "test/terminal/terminal-list.test.ts",
  "test/app/claim-transfer.test.ts",
  "test/app/restart.test.ts",
  "test/terminal/restart-app.test.ts",
  "test/cli/cli-pg.test.ts",
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

const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: "forks"
} as const

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: "sqlite",
          include: ["test/**/*.test.ts"],
          // Packing and installing the tarball: `npm run test:installed` (vitest.installed.config.ts).
          exclude: [...configDefaults.exclude, "test/e2e/installed/**", ...POSTGRES_ONLY],
          globalSetup: ["test/global-setup.ts"]
        }
      },
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
