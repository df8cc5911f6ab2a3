/**
 * Claim tokens name their owner process (src/delivery/coordinator-live.ts): a claim whose owner died on this
 * machine is freed at once, so a restarted Pi delivers without waiting out the lease. The dead
 * owner here is a real child process that has exited.
 */
import { spawnSync } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bootId, isDeadOwner, ownerOf, ownerToken } from "../../src/delivery/coordinator-live.ts"
import { makeHarness, run, terminal } from "../conformance/harness.ts"

const deadPid = (): number => {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8"
  })
  return Number(child.stdout)
}

describe("owner tokens", () => {
  it("name this boot and process; only a gone process of this boot is dead", () => {
    const boot = bootId()
    if (boot === null) return // no boot identity on this platform: only leases free claims
    const mine = ownerToken()
    expect(ownerOf(mine)).toEqual({ boot, pid: process.pid })
    expect(isDeadOwner(mine)).toBe(false)
    expect(isDeadOwner(ownerToken(deadPid()))).toBe(true)
    expect(isDeadOwner(ownerToken(deadPid(), "0123456789ab"))).toBe(false) // another boot or machine
    expect(isDeadOwner("coordinator:old-format")).toBe(false)
    expect(isDeadOwner(ownerToken(process.ppid))).toBe(false) // alive
  })

  it.scoped("session start frees a dead owner's live claim and delivers at once", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(terminal("failed", null, { run: run() }))
      // A Pi process that claimed it (30 s lease) and was killed.
      const dead = `${ownerToken(deadPid())}:sync`
      const claimed = yield* h.store.claimEligibleForSession({
        targetSessionId: "session-1",
        limit: 1,
        token: dead,
        leaseMs: 30_000
      })
      expect(claimed).toHaveLength(1)
      // No clock advance: the lease is still live, the owner is known dead.
      const report = yield* h.coordinator.onSessionStart
      expect(report.delivered).toEqual(bootId() === null ? [] : [intentId])
    })
  )
})
