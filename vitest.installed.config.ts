/**
 * The installed-package tests (test/e2e/installed): they pack the package and install the
 * tarball with npm and `pi install`, minutes on a busy machine, so `npm test` leaves them to
 * `npm run test:installed` (a step of .ci/run).
 */
import { configDefaults, defineConfig } from "vitest/config"
import base from "./vitest.config.ts"

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ["test/e2e/installed/**/*.test.ts"],
    exclude: [...configDefaults.exclude],
    testTimeout: 240_000
  }
})
