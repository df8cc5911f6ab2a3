/**
 * Who the `serve` server answers, decided before any route runs; pure (no I/O), so every refusal
 * is tested without a socket. The server listens on 127.0.0.1 only, and that is not enough: a web
 * page in the same browser can reach it. So: a `Host` other than `127.0.0.1:<port>` or
 * `localhost:<port>` is refused (DNS rebinding: a foreign name resolving to 127.0.0.1 carries
 * its own name); an `Origin` that is present and not the server's own is refused (another site's
 * script); only GET and HEAD exist (nothing here writes); and every request must carry the
 * random access token, in `?token=` or `Authorization: Bearer`, compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/** A new access token: 192 random bits, URL-safe. */
export const newToken = (): string => randomBytes(24).toString("base64url")

export interface Asked {
  readonly method: string
  readonly host: string | undefined
  readonly origin: string | undefined
  readonly authorization: string | undefined
  /** The `token` query parameter. */
  readonly queryToken: string | null
}

export type Verdict =
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Refused"; readonly status: 401 | 403 | 405; readonly message: string }

const refused = (status: 401 | 403 | 405, message: string): Verdict => ({ _tag: "Refused", status, message })

/** Equal in time independent of where they differ (both hashed: equal lengths, no length leak). */
export const sameToken = (given: string, expected: string): boolean =>
  timingSafeEqual(createHash("sha256").update(given).digest(), createHash("sha256").update(expected).digest())

/** The hosts this server answers to: its loopback address and `localhost`, at its port. */
export const ownHosts = (port: number): ReadonlyArray<string> => [`127.0.0.1:${port}`, `localhost:${port}`]

const bearer = (authorization: string | undefined): string | null => {
  const match = /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(authorization ?? "")
  return match?.[1] ?? null
}

export const decide = (
  asked: Asked,
  expected: { readonly token: string; readonly port: number }
): Verdict => {
  const hosts = ownHosts(expected.port)
  const host = asked.host?.toLowerCase()
  if (host === undefined || !hosts.includes(host))
    return refused(403, "this server answers only to its own address")
  if (asked.origin !== undefined && asked.origin.toLowerCase() !== `http://${host}`) {
    return refused(403, "requests from other origins are refused")
  }
  if (asked.method !== "GET" && asked.method !== "HEAD") return refused(405, "only GET and HEAD are served")
  const given = bearer(asked.authorization) ?? asked.queryToken
  return given !== null && sameToken(given, expected.token)
    ? { _tag: "Allowed" }
    : refused(401, "the access token is missing or wrong (use the URL serve printed)")
}
