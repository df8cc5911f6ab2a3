/**
 * Whether and where traces go out over OTLP, read from the standard OpenTelemetry variables:
 * pure (an environment record in, a decision out), so every rule is tested without a layer.
 *
 * - No endpoint: no export, silently (the default: telemetry costs nothing).
 * - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: no export, whatever else is set.
 * - A value that cannot work (an endpoint that is no http(s) URL, a header list that is not
 *   `key=value,…`, gRPC): no export and one warning line. A typo in telemetry settings must
 *   never stop Pi or the CLI, and must not half-work either (a header list with one entry
 *   dropped would send traces without their credential). Warnings name the variable and the
 *   problem, never a value: header values and endpoints can carry credentials.
 */
import { Either, Option } from "effect"

export const DEFAULT_SERVICE_NAME = "pi-workflow-turns"
/** One export request's bound (the specification's default, 10 s). */
export const DEFAULT_TIMEOUT_MS = 10_000

export interface OtlpConfig {
  /** The traces endpoint, in full (`…/v1/traces`). */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** `service.name` of the resource. */
  readonly serviceName: string
  /** The other resource attributes (`OTEL_RESOURCE_ATTRIBUTES`). */
  readonly resourceAttributes: Readonly<Record<string, string>>
  /** How long one export request may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds). */
  readonly timeoutMs: number
}

export type OtlpEnv = Readonly<Record<string, string | undefined>>

/** Right(None): off; Right(Some): export with this config; Left: off, with this warning line. */
export type OtlpSetting = Either.Either<Option.Option<OtlpConfig>, string>

const off: OtlpSetting = Either.right(Option.none())
const invalid = (problem: string): OtlpSetting => Either.left(`traces are off: ${problem}`)

const setting = (env: OtlpEnv, name: string): string | undefined => {
  const raw = env[name]?.trim()
  return raw === undefined || raw === "" ? undefined : raw
}

/** An HTTP header name (RFC 9110 token): anything else makes every export request fail. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// A value with a line break or NUL cannot go into a request (fetch throws at every export).
// biome-ignore lint/suspicious/noControlCharactersInRegex: exactly the characters refused
const BAD_VALUE = /[\r\n\u0000]/

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/**
 * A W3C-baggage-like `key=value,key2=value2` list, percent-decoded: the syntax of both the
 * header and the resource attribute variables. Empty entries (a trailing comma) are skipped;
 * the first `=` splits, so a value may hold `=` (base64). Left: the problem, without values.
 */
export const parseKeyValues = (
  name: string,
  text: string,
  isKey: (key: string) => boolean = (key) => key !== ""
): Either.Either<Record<string, string>, string> => {
  const pairs: Record<string, string> = {}
  const entries = text.split(",")
  for (const [index, entry] of entries.entries()) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    const key = at < 0 ? undefined : decode(entry.slice(0, at).trim())
    const value = at < 0 ? undefined : decode(entry.slice(at + 1).trim())
    if (key === undefined || value === undefined || !isKey(key) || BAD_VALUE.test(value)) {
      return Either.left(
        `${name}: entry ${index + 1} is not key=value (percent-encoded; values are not shown)`
      )
    }
    pairs[key] = value
  }
  return Either.right(pairs)
}

const isHttpUrl = (text: string): boolean => {
  if (!URL.canParse(text)) return false
  const { protocol, hostname } = new URL(text)
  return (protocol === "http:" || protocol === "https:") && hostname !== ""
}

/** The traces endpoint: the signal's own variable in full, else the base one + `/v1/traces`. */
const endpoint = (env: OtlpEnv): Either.Either<Option.Option<string>, string> => {
  const own = setting(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  if (own !== undefined) {
    return isHttpUrl(own)
      ? Either.right(Option.some(own))
      : Either.left("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not an http(s) URL")
  }
  const base = setting(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  if (base === undefined) return Either.right(Option.none())
  if (!isHttpUrl(base)) return Either.left("OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL")
  const url = new URL(base)
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`
  return Either.right(Option.some(url.href))
}

/**
 * OTLP/HTTP only. The payload is JSON, which OTLP/HTTP receivers take on the same path as
 * protobuf, so `http/protobuf` (the specification's default, set by many setups) is accepted too.
 */
const protocolProblem = (env: OtlpEnv): string | null => {
  const name = setting(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL"
  const protocol = setting(env, name)?.toLowerCase()
  if (protocol === undefined || protocol === "http/json" || protocol === "http/protobuf") return null
  return `${name} must be http/json or http/protobuf (gRPC is not supported)`
}

/** The signal's own timeout, else the shared one, in whole milliseconds (0 is no bound: refused). */
const timeout = (env: OtlpEnv): Either.Either<number, string> => {
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]) {
    const raw = setting(env, name)
    if (raw === undefined) continue
    const ms = Number(raw)
    return /^\d+$/.test(raw) && Number.isSafeInteger(ms) && ms > 0
      ? Either.right(ms)
      : Either.left(`${name} must be a positive whole number of milliseconds`)
  }
  return Either.right(DEFAULT_TIMEOUT_MS)
}

/** `OTEL_TRACES_EXPORTER`: unset or listing `otlp` exports; `none` (anywhere in the list) does not. */
const exporterChoice = (env: OtlpEnv): "otlp" | "none" | "unsupported" => {
  const raw = setting(env, "OTEL_TRACES_EXPORTER")
  if (raw === undefined) return "otlp"
  const names = raw.split(",").map((name) => name.trim().toLowerCase())
  if (names.includes("none")) return "none"
  return names.includes("otlp") ? "otlp" : "unsupported"
}

export const otlpConfig = (env: OtlpEnv): OtlpSetting => {
  if (setting(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return off
  const exporter = exporterChoice(env)
  if (exporter === "none") return off
  const url = endpoint(env)
  if (Either.isLeft(url)) return invalid(url.left)
  if (Option.isNone(url.right)) return off
  if (exporter === "unsupported") return invalid("OTEL_TRACES_EXPORTER names no exporter but otlp or none")
  const protocol = protocolProblem(env)
  if (protocol !== null) return invalid(protocol)
  const timeoutMs = timeout(env)
  if (Either.isLeft(timeoutMs)) return invalid(timeoutMs.left)
  const headers: Record<string, string> = {}
  // The signal's own list is read last: its keys win over the shared list's.
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    const text = setting(env, name)
    if (text === undefined) continue
    const parsed = parseKeyValues(name, text, (key) => HEADER_NAME.test(key))
    if (Either.isLeft(parsed)) return invalid(parsed.left)
    Object.assign(headers, parsed.right)
  }
  const attributesText = setting(env, "OTEL_RESOURCE_ATTRIBUTES")
  const attributes =
    attributesText === undefined
      ? Either.right<Record<string, string>>({})
      : parseKeyValues("OTEL_RESOURCE_ATTRIBUTES", attributesText)
  if (Either.isLeft(attributes)) return invalid(attributes.left)
  const { "service.name": named, ...resourceAttributes } = attributes.right
  return Either.right(
    Option.some({
      url: url.right.value,
      headers,
      // OTEL_SERVICE_NAME wins over `service.name` in the attributes (the specification's order).
      serviceName: setting(env, "OTEL_SERVICE_NAME") ?? (named?.trim() || DEFAULT_SERVICE_NAME),
      resourceAttributes,
      timeoutMs: timeoutMs.right
    })
  )
}
