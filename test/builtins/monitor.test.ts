/**
 * The monitor built-in on the real engine with real child processes: a fake `gh` on PATH plays
 * a CI that turns green after a few checks. Live clock with short intervals; no assertion on
 * elapsed time.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  runCommand,
  MAX_REPORTED_CHARS,
  type MonitorResult,
  makeMonitor
} from "../../src/builtins/monitor.ts"
import { makeHarness, SESSION } from "../engine/support/harness.ts"

let bin = ""
let savedPath: string | undefined

const script = (name: string, body: string) => {
  const file = join(bin, name)
  writeFileSync(file, `#!/bin/sh\n${body}\n`)
  chmodSync(file, 0o755)
  return file
}

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), "pwt-monitor-"))
  savedPath = process.env.PATH
  process.env.PATH = `${bin}:${savedPath ?? ""}`
  // `gh pr checks N`: pending (exit 8) until the counter file reaches 3 calls, then green.
  script(
    "gh",
    `count_file="${bin}/gh-calls"; n=$(cat "$count_file" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$count_file"
if [ "$n" -lt 3 ]; then echo "build pending ($n)"; exit 8; fi
echo "build pass"; echo "all checks passed"`
  )
  script("always-red", 'echo "still red"; echo "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123" >&2; exit 1')
  script(
    "chatty",
    'i=0; while [ $i -lt 3000 ]; do echo "line $i of output padding padding"; i=$((i+1)); done; echo "sk-ant-abcdefghijklmnopqrstu"'
  )
  script("hang", `echo $$ > "${bin}/hang.pid"; sleep 300 & echo $! > "${bin}/child.pid"; wait`)
})

afterAll(() => {
  process.env.PATH = savedPath
  rmSync(bin, { recursive: true, force: true })
})

const harness = () => makeHarness({ definitions: [makeMonitor({ run: runCommand })] })

/** Poll on the live clock (processes need real time to start and be reaped); bounded. */
const eventually = (check: () => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      if (check()) return
      yield* Effect.sleep(50)
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

/** Whether the process is running; a zombie (killed, not yet reaped by its parent or init) is not. */
const alive = (pidFile: string) => {
  const pid = Number(readFileSync(pidFile, "utf8").trim())
  const stat = `/proc/${pid}/stat`
  if (existsSync("/proc/self/stat")) {
    if (!existsSync(stat)) return false
    // The state letter follows the parenthesised command name.
    return !/\)\s+Z\s/.test(readFileSync(stat, "utf8"))
  }
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("monitor", () => {
  it.scopedLive("checks on a schedule until the command succeeds, and reports what it saw", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("monitor", {
        command: ["gh", "pr", "checks", "7"],
        intervalMs: 100,
        deadlineMs: 60_000,
        description: "CI of pull request 7"
      })
      const done = yield* h.engine.await(runId)
      expect(done.state).toBe("completed")
      const result = done.result as MonitorResult
      expect(result).toMatchObject({
        status: "met",
        checks: 3,
        command: ["gh", "pr", "checks", "7"],
        description: "CI of pull request 7",
        last: { exitCode: 0, stdout: "build pass\nall checks passed\n", stderr: "", truncated: false }
      })
      const presentation = (yield* h.coordinator.take).message.content
      expect(presentation).toContain("Monitor: the condition is met (CI of pull request 7) after 3 check(s).")
    })
  )

  it.scopedLive("stops at the deadline with the last observation, secrets redacted", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("monitor", { command: ["always-red"], intervalMs: 100, deadlineMs: 700 })
      const done = yield* h.engine.await(runId)
      const result = done.result as MonitorResult
      expect([done.state, result.status]).toEqual(["completed", "deadline"])
      expect(result.checks).toBeGreaterThanOrEqual(1)
      expect(result.last).toMatchObject({
        exitCode: 1,
        stdout: "still red\n",
        stderr: "GITHUB_TOKEN=[REDACTED]\n"
      })
      expect(JSON.stringify(done)).not.toContain("ghp_")
    })
  )

  it.scopedLive("keeps only a bounded, redacted tail of large output", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const done = yield* h.engine.await(
        yield* h.launch("monitor", { command: ["chatty"], deadlineMs: 60_000 })
      )
      const last = (done.result as MonitorResult).last
      expect(last?.truncated).toBe(true)
      expect(last?.stdout.length).toBeLessThanOrEqual(MAX_REPORTED_CHARS + 1)
      expect(last?.stdout.endsWith("[REDACTED]\n")).toBe(true)
      expect(JSON.stringify(done.result)).not.toContain("sk-ant-")
    })
  )

  it.scopedLive("passes argv as is: no shell expands or chains anything", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const marker = join(bin, "should-not-exist")
      const done = yield* h.engine.await(
        yield* h.launch("monitor", { command: ["echo", "$HOME", ";", "touch", marker], deadlineMs: 60_000 })
      )
      expect((done.result as MonitorResult).last?.stdout).toBe(`$HOME ; touch ${marker}\n`)
      expect(existsSync(marker)).toBe(false)
    })
  )

  it.scopedLive("cancelling the run kills the command and everything it started", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("monitor", { command: ["hang"], deadlineMs: 600_000 })
      yield* eventually(
        () => existsSync(join(bin, "child.pid")) && alive(join(bin, "child.pid")),
        "the check to start"
      )
      const cancelled = yield* h.engine.cancel(runId, { by: "user" })
      expect(cancelled.state).toBe("cancelled")
      yield* eventually(
        () => !alive(join(bin, "hang.pid")) && !alive(join(bin, "child.pid")),
        "the command to die"
      )
    })
  )

  it.scopedLive("a program that cannot start fails the run with a clear error", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const done = yield* h.engine.await(yield* h.launch("monitor", { command: ["no-such-program-pwt"] }))
      expect(done.state).toBe("failed")
      expect(done.error?.original).toMatch(
        /^cannot run "no-such-program-pwt": spawn no-such-program-pwt ENOENT/
      )
    })
  )

  it.scopedLive(
    "a shell string, an empty argv or a bad interval is refused at start; nothing is stored",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        for (const input of [
          { command: "gh pr checks 7" },
          { command: [] },
          { command: [""] },
          { command: ["gh"], intervalMs: 0 },
          { command: ["gh"], deadlineMs: 25 * 3_600_000 },
          { command: ["gh"], extra: true }
        ]) {
          const refused = yield* Effect.flip(
            h.engine.start({ workflow: "monitor", input, sessionId: SESSION, origin: "tool" })
          )
          expect(refused._tag).toBe("InvalidWorkflowInput")
        }
        expect(yield* h.engine.list(SESSION)).toEqual([])
      })
  )
})
