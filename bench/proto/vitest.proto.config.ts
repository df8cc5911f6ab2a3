/**
 * The project's store and conformance tests with the bench/proto store in place of
 * src/store/turn-intent-store-sqlite.ts, to check the prototype keeps the contract:
 * `npx vitest run --config bench/proto/vitest.proto.config.ts`
 */
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const proto = fileURLToPath(new URL("./turn-intent-store-fast.ts", import.meta.url))

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  resolve: { alias: [{ find: /^.*\/src\/store\/turn-intent-store-sqlite\.ts$/, replacement: proto }] },
  test: {
    include: ["test/store/**/*.test.ts", "test/conformance/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks"
  }
})
