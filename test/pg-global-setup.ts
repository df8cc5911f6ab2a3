/**
 * The `postgres` test project's global setup: one throwaway PostgreSQL cluster for the whole run
 * (test/support/pg-cluster.ts), stopped and removed at teardown. Test files reach it through
 * `inject("pgAdminUrl")` and make their own database (test/support/backend.ts).
 */
import type { TestProject } from "vitest/node"
import { startCluster, stopCluster } from "./support/pg-cluster.ts"

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string
  }
}

export default function setup(project: TestProject): () => void {
  const cluster = startCluster()
  project.provide("pgAdminUrl", cluster.adminUrl)
  return () => stopCluster(cluster)
}
