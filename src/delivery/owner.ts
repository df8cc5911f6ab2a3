/**
 * Claim tokens that name their owner process, so a restarted Pi can tell that a claim's owner
 * died on this machine and take its intents at once instead of waiting out the lease.
 *
 * A token reads `pwt.<boot>.<pid>.<random>`: `boot` identifies this machine's current boot
 * (Linux `/proc/sys/kernel/random/boot_id`, hashed), `pid` the owning process. A claim is from a
 * dead owner only when its boot is this machine's and no process has that pid. Anything else (a
 * token of another machine or boot, a pid reused by another process, a token in another format,
 * no boot identity available) counts as alive: across machines only the lease frees a claim.
 */
import { createHash, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"

const readBootId = (): string | null => {
  try {
    const raw = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
    return raw === "" ? null : createHash("sha256").update(raw).digest("hex").slice(0, 12)
  } catch {
    return null
  }
}

let cachedBoot: string | null | undefined

/** This machine's boot identity, or null when the platform does not offer one. */
export const bootId = (): string | null => {
  if (cachedBoot === undefined) cachedBoot = readBootId()
  return cachedBoot
}

/** A fresh claimant prefix naming this process (or only random, without a boot identity). */
export const ownerToken = (pid: number = process.pid, boot: string | null = bootId()): string =>
  boot === null ? `coordinator:${randomUUID()}` : `pwt.${boot}.${pid}.${randomUUID()}`

const TOKEN = /^pwt\.([0-9a-f]{12})\.(\d{1,10})\./

/** The owner a token names, if it names one. */
export const ownerOf = (token: string): { readonly boot: string; readonly pid: number } | null => {
  const match = TOKEN.exec(token)
  if (match === null || match[1] === undefined || match[2] === undefined) return null
  return { boot: match[1], pid: Number(match[2]) }
}

/** True when no process has this pid (signal 0 probes without signalling). */
export const pidIsGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    // EPERM: a process exists but belongs to someone else.
    return typeof error === "object" && error !== null && "code" in error && error.code === "ESRCH"
  }
}

/** True when the token's owner is a process of this boot of this machine that no longer runs. */
export const isDeadOwner = (
  token: string,
  boot: string | null = bootId(),
  gone: (pid: number) => boolean = pidIsGone
): boolean => {
  const owner = ownerOf(token)
  if (owner === null || boot === null || owner.boot !== boot) return false
  if (owner.pid === process.pid) return false
  return gone(owner.pid)
}
