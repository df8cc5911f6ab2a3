/**
 * Run claims name their owner process, so a restarted session can tell that the process holding
 * a claim is gone instead of waiting out the lease. A claim token reads
 * `claim-<uuid>@<host>/<boot id>/<pid>`. On the same machine (same host and boot id) a pid that
 * no longer exists proves the owner dead. Across machines nothing is provable: only the lease
 * decides there. A reused pid only makes a dead owner look alive (the lease still ends it).
 */
import { readFileSync } from "node:fs"
import { hostname, uptime } from "node:os"

export interface Owner {
  readonly host: string
  readonly boot: string
  readonly pid: number
}

const bootId = (): string => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
  } catch {
    // No boot id: the boot time to the minute stands in for it.
    return `t${Math.round((Date.now() / 1000 - uptime()) / 60)}`
  }
}

let self: Owner | undefined
/** This process. */
export const currentOwner = (): Owner => {
  self ??= { host: hostname(), boot: bootId(), pid: process.pid }
  return self
}

export const claimToken = (id: string, owner: Owner = currentOwner()): string =>
  `claim-${id}@${encodeURIComponent(owner.host)}/${encodeURIComponent(owner.boot)}/${owner.pid}`

/** The owner a token names, or null for tokens without one (older releases, other writers). */
export const ownerOf = (token: string): Owner | null => {
  const at = token.lastIndexOf("@")
  if (at < 0) return null
  const parts = token.slice(at + 1).split("/")
  if (parts.length !== 3) return null
  const [host, boot, pid] = parts
  if (host === undefined || boot === undefined || pid === undefined || !/^\d+$/.test(pid)) return null
  try {
    return { host: decodeURIComponent(host), boot: decodeURIComponent(boot), pid: Number(pid) }
  } catch {
    return null
  }
}

/** Is a process with this pid alive on this machine? (EPERM: alive, owned by someone else.) */
export const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return typeof error === "object" && error !== null && "code" in error && error.code === "EPERM"
  }
}

/**
 * True only when the token's owner is provably gone: same machine and boot, another pid, and
 * that pid does not exist. Pure given `alive`.
 */
export const ownerIsDead = (
  token: string,
  me: Owner = currentOwner(),
  alive: (pid: number) => boolean = pidAlive
): boolean => {
  const owner = ownerOf(token)
  if (owner === null) return false
  if (owner.host !== me.host || owner.boot !== me.boot || owner.pid === me.pid) return false
  return !alive(owner.pid)
}
