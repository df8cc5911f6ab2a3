/**
 * The installed-package tests (test/e2e/installed): they pack the package and install the
 * tarball with npm and `pi install`, minutes on a busy machine, so `npm test` leaves them to
 * `npm run test:installed` (a step of .ci/run). A config of its own: the main config's
 * `projects` would otherwise run the whole suite instead of these files.
 */
import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/e2e/installed/**/*.test.ts"],
    exclude: [...configDefaults.exclude],
    globalSetup: ["test/global-setup.ts"],
    pool: "forks",
    testTimeout: 240_000,
    hookTimeout: 240_000
  }
})
