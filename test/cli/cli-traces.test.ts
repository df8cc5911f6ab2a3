/**
 * The CLI with the OTLP variables: its spans (one trace per invocation, the stores' spans under
 * `WorkflowCli.run`) reach a stand-in collector before it exits; a bad setting is one warning
 * line and changes nothing else; a collector that is down does not hold the exit up.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { attribute, type Collector, receivedSpans, startCollector } from "../support/otlp-collector.ts"
import { runCli } from "./cli-support.ts"
import { seedHealthy, withStores } from "./seed-sqlite.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const pkg: unknown = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const bin =
  typeof pkg === "object" && pkg !== null && "bin" in pkg && typeof pkg.bin === "object" && pkg.bin !== null
    ? Reflect.get(pkg.bin, "pi-workflow-turns")
    : undefined

let dir = ""
let db = ""
let collector: Collector

const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  runCli(join(root, String(bin)), dir, args, env)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-cli-traces-"))
  db = join(dir, "healthy.db")
  await Effect.runPromise(withStores(db, seedHealthy))
  collector = await startCollector()
})

afterAll(async () => {
  await collector.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("the CLI's traces", () => {
  it("one trace per invocation, exported before the exit; the output is the same", async () => {
    const plain = await cli(["runs", "--db", db, "--json"], {})
    const traced = await cli(["runs", "--db", db, "--json"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint
    })
    expect([traced.code, traced.stderr]).toEqual([0, ""])
    expect(JSON.parse(traced.stdout)).toEqual(JSON.parse(plain.stdout))
    const spans = receivedSpans(collector)
    const run = spans.find((s) => s.name === "WorkflowCli.run")
    expect(run && attribute(run, "cli.command")).toBe("runs")
    const below = spans.filter((s) => s.traceId === run?.traceId && s !== run).map((s) => s.name)
    expect(below).toContain("RunStore.list")
  })

  it("a bad setting: one warning line, no traces, the command works", async () => {
    const before = collector.received.length
    const result = await cli(["runs", "--db", db, "--json"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: "authorization"
    })
    expect(result.code).toBe(0)
    expect(result.stderr).toBe(
      "pi-workflow-turns: warning: traces are off: OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value " +
        "(percent-encoded; values are not shown)\n"
    )
    expect(JSON.parse(result.stdout)).toHaveLength(2)
    expect(collector.received.length).toBe(before)
  })

  it("a collector that is down: the same exit code, no wait for it", async () => {
    // A port that refuses (port 9 would not do: fetch never dials it, a "bad port").
    const down = await startCollector()
    await down.close()
    const started = Date.now()
    const result = await cli(["show", "--db", db, "no-such-run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: down.endpoint
    })
    expect(result.code).toBe(1)
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})
