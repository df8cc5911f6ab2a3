/**
 * Whether and where traces go, from the standard OpenTelemetry variables; pure, so every rule
 * is tested without a layer. No endpoint, `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`:
 * off. A value that cannot work (an endpoint that is no http(s) URL, headers that are not
 * `key=value,…`, gRPC): off with one warning, which names the variable, never a value (headers
 * and URLs carry credentials); half-working is worse (traces sent without their credential).
 */
import { Either, Option } from "effect"

export interface OtlpConfig {
  /** The traces endpoint in full (`…/v1/traces`). */
  readonly url: string
  /** The body's encoding: OTLP/JSON unless the protocol variable asks for protobuf. */
  readonly protocol: "http/json" | "http/protobuf"
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly resourceAttributes: Readonly<Record<string, string>>
}

export type OtlpEnv = Readonly<Record<string, string | undefined>>

/** Right(None): off; Right(Some): on; Left: off, with this warning line. */
export type OtlpSetting = Either.Either<Option.Option<OtlpConfig>, string>

const off: OtlpSetting = Either.right(Option.none())
const invalid = (problem: string): OtlpSetting => Either.left(`traces are off: ${problem}`)

const setting = (env: OtlpEnv, name: string): string | undefined => env[name]?.trim() || undefined

/** An RFC 9110 header name; a value with a line break or NUL fails every request. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: exactly the characters refused
const BAD_VALUE = /[\r\n\u0000]/

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.trim())
  } catch {
    return undefined
  }
}

/** A percent-encoded `key=value,…` list (the first `=` splits; empty entries are skipped). */
export const parseKeyValues = (
  name: string,
  text: string,
  isKey: (key: string) => boolean = (key) => key !== ""
): Either.Either<Record<string, string>, string> => {
  const pairs: Record<string, string> = {}
  for (const [index, entry] of text.split(",").entries()) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    const key = at < 0 ? undefined : decode(entry.slice(0, at))
    const value = at < 0 ? undefined : decode(entry.slice(at + 1))
    if (key === undefined || value === undefined || !isKey(key) || BAD_VALUE.test(value)) {
      return Either.left(
        `${name}: entry ${index + 1} is not key=value (percent-encoded; values are not shown)`
      )
    }
    pairs[key] = value
  }
  return Either.right(pairs)
}

const httpUrl = (text: string): URL | undefined => {
  const url = URL.canParse(text) ? new URL(text) : undefined
  return url && /^https?:$/.test(url.protocol) && url.hostname !== "" ? url : undefined
}

/** The signal's own endpoint as given, else the base one + `/v1/traces`; Left names the bad one. */
const endpoint = (env: OtlpEnv): Either.Either<string | undefined, string> => {
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]) {
    const text = setting(env, name)
    if (text === undefined) continue
    const url = httpUrl(text)
    if (url === undefined) return Either.left(`${name} is not an http(s) URL`)
    if (name === "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") return Either.right(text)
    url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`
    return Either.right(url.href)
  }
  return Either.right(undefined)
}

export const otlpConfig = (env: OtlpEnv): OtlpSetting => {
  const exporters = setting(env, "OTEL_TRACES_EXPORTER")
    ?.toLowerCase()
    .split(/\s*,\s*/) ?? ["otlp"]
  if (setting(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true" || exporters.includes("none")) return off
  const url = endpoint(env)
  if (Either.isLeft(url)) return invalid(url.left)
  if (url.right === undefined) return off
  if (!exporters.includes("otlp")) return invalid("OTEL_TRACES_EXPORTER names no exporter but otlp or none")
  // OTLP/JSON by default: OTLP/HTTP receivers take it on the same path as protobuf, and a body a
  // person can read helps the first setup; `http/protobuf` is sent as asked.
  const protocolName = setting(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL"
  const protocol = setting(env, protocolName)?.toLowerCase() ?? "http/json"
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    return invalid(`${protocolName} must be http/json or http/protobuf (gRPC is not supported)`)
  }
  const headers: Record<string, string> = {}
  // The signal's own list last: its keys win.
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    const parsed = parseKeyValues(name, setting(env, name) ?? "", (key) => HEADER_NAME.test(key))
    if (Either.isLeft(parsed)) return invalid(parsed.left)
    Object.assign(headers, parsed.right)
  }
  const attributes = parseKeyValues(
    "OTEL_RESOURCE_ATTRIBUTES",
    setting(env, "OTEL_RESOURCE_ATTRIBUTES") ?? ""
  )
  if (Either.isLeft(attributes)) return invalid(attributes.left)
  const { "service.name": named, ...resourceAttributes } = attributes.right
  return Either.right(
    Option.some({
      url: url.right,
      protocol,
      headers,
      // OTEL_SERVICE_NAME wins over the attributes' `service.name` (the specification's order).
      serviceName: setting(env, "OTEL_SERVICE_NAME") ?? (named?.trim() || "pi-workflow-turns"),
      resourceAttributes
    })
  )
}
