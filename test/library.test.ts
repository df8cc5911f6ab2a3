/**
 * The public entries export exactly what docs/library.md teaches: every runtime export of
 * `pi-workflow-turns` and `pi-workflow-turns/testing` is named on that page, and nothing else is
 * exported.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import * as Library from "../src/index.ts"
import * as Testing from "../src/testing.ts"

const page = readFileSync(new URL("../docs/library.md", import.meta.url), "utf8")

const LIBRARY = [
  "AbortBookkeeping",
  "App",
  "Coordinator",
  "Core",
  "Database",
  "Engine",
  "EngineErrors",
  "EngineLive",
  "Errors",
  "EventPolicy",
  "Facts",
  "Fallback",
  "Identity",
  "Interruptions",
  "LaunchStore",
  "LaunchStoreSql",
  "NotificationStore",
  "NotificationStoreSql",
  "Notifications",
  "Notifier",
  "PiSession",
  "RunStore",
  "RunStoreSql",
  "SourceEvents",
  "TimingPolicy",
  "TurnIntent",
  "TurnIntentStore",
  "TurnIntentStoreSql",
  "WorkflowRegistry",
  "defineWorkflow"
]

const TESTING = ["PiSessionFake", "StoreFaults", "layerFake", "layerTempStore", "makeFake", "tempDirectory"]

describe("the public entries", () => {
  it("pi-workflow-turns exports the namespaces docs/library.md lists, and only those", () => {
    expect(Object.keys(Library).sort()).toEqual([...LIBRARY].sort())
    for (const name of LIBRARY) expect(page).toContain(`\`${name}\``)
  })

  it("pi-workflow-turns/testing exports the kits docs/library.md lists, and only those", () => {
    expect(Object.keys(Testing).sort()).toEqual([...TESTING].sort())
    for (const name of TESTING) expect(page).toContain(`\`${name}\``)
  })

  it("the composed application's layers have their short names", () => {
    // layerSyncOnEligible is @internal: present at runtime, absent from the published declarations.
    expect(Object.keys(Library.App).sort()).toEqual(
      ["layer", "layerStores", "layerStoresPg", "layerSyncOnEligible", "layerWith"].sort()
    )
    expect(typeof Library.Core.layer).toBe("function")
  })
})
