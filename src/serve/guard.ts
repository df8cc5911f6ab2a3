/**
 * Who `serve` answers, decided before any route runs (pure: tested without a socket). Binding
 * 127.0.0.1 is not enough, since any page in the browser can reach it: a Host other than
 * `127.0.0.1:<port>` or `localhost:<port>` is refused (DNS rebinding: a foreign name that
 * resolves to 127.0.0.1 still sends its own name), as is an Origin other than the page's own (a
 * foreign site's script); only GET and HEAD exist; and each request carries the random access
 * token, `?token=` or `Authorization: Bearer`, compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/** A new access token: 192 random bits, URL-safe. */
export const newToken = (): string => randomBytes(24).toString("base64url")

export interface Asked {
  readonly method: string
  readonly host: string | undefined
  readonly origin: string | undefined
  readonly authorization: string | undefined
  readonly queryToken: string | null
}

export type Verdict =
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Refused"; readonly status: 401 | 403 | 405; readonly message: string }

/** Hashed first: equal lengths, so neither the length nor the first difference shows in the time. */
export const sameToken = (given: string, expected: string): boolean =>
  timingSafeEqual(createHash("sha256").update(given).digest(), createHash("sha256").update(expected).digest())

const refuse = (status: 401 | 403 | 405, message: string): Verdict => ({ _tag: "Refused", status, message })

export const decide = (
  asked: Asked,
  expected: { readonly token: string; readonly port: number }
): Verdict => {
  const host = asked.host?.toLowerCase() ?? ""
  if (host !== `127.0.0.1:${expected.port}` && host !== `localhost:${expected.port}`) {
    return refuse(403, "this server answers only to its own address")
  }
  if (asked.origin !== undefined && asked.origin.toLowerCase() !== `http://${host}`) {
    return refuse(403, "requests from other origins are refused")
  }
  if (asked.method !== "GET" && asked.method !== "HEAD") return refuse(405, "only GET and HEAD are served")
  const bearer = /^Bearer ([\w-]{1,200})$/.exec(asked.authorization ?? "")?.[1]
  const given = bearer ?? asked.queryToken
  return given != null && sameToken(given, expected.token)
    ? { _tag: "Allowed" }
    : refuse(401, "the access token is missing or wrong (use the URL serve printed)")
}
