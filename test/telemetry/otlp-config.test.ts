/** The OTLP settings, from an environment record to a decision: every variable and bad value. */
import { Either, Option } from "effect"
import { describe, expect, it } from "vitest"
import { type OtlpConfig, type OtlpEnv, otlpConfig, parseKeyValues } from "../../src/telemetry/otlp-config.ts"

const BASE = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }

const config = (env: OtlpEnv): OtlpConfig => {
  const setting = otlpConfig(env)
  if (Either.isLeft(setting)) throw new Error(`unexpected warning: ${setting.left}`)
  if (Option.isNone(setting.right)) throw new Error("unexpectedly off")
  return setting.right.value
}

const isOff = (env: OtlpEnv) => {
  const setting = otlpConfig(env)
  return Either.isRight(setting) && Option.isNone(setting.right)
}

const warning = (env: OtlpEnv): string => {
  const setting = otlpConfig(env)
  if (Either.isRight(setting)) throw new Error("expected a warning")
  return setting.left
}

describe("whether traces are exported", () => {
  it("off, silently, without an endpoint (whatever else is set)", () => {
    expect(isOff({})).toBe(true)
    expect(isOff({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(true)
    expect(
      isOff({ OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_HEADERS: "bad", OTEL_TRACES_EXPORTER: "zipkin" })
    ).toBe(true)
  })

  it("off with OTEL_SDK_DISABLED=true (any case) or OTEL_TRACES_EXPORTER=none, even with bad values", () => {
    expect(isOff({ ...BASE, OTEL_SDK_DISABLED: "true" })).toBe(true)
    expect(isOff({ ...BASE, OTEL_SDK_DISABLED: " TRUE " })).toBe(true)
    expect(isOff({ ...BASE, OTEL_TRACES_EXPORTER: "none" })).toBe(true)
    expect(isOff({ ...BASE, OTEL_TRACES_EXPORTER: "otlp, none" })).toBe(true)
    expect(isOff({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url", OTEL_SDK_DISABLED: "true" })).toBe(true)
    // Anything but "true" leaves the SDK enabled.
    expect(config({ ...BASE, OTEL_SDK_DISABLED: "false" }).url).toBe("http://127.0.0.1:4318/v1/traces")
    expect(config({ ...BASE, OTEL_SDK_DISABLED: "1" }).url).toBe("http://127.0.0.1:4318/v1/traces")
  })

  it("on with otlp named (or no exporter named); another exporter alone is a warning", () => {
    expect(config({ ...BASE, OTEL_TRACES_EXPORTER: "otlp" }).url).toContain("/v1/traces")
    expect(config({ ...BASE, OTEL_TRACES_EXPORTER: "console,OTLP" }).url).toContain("/v1/traces")
    expect(warning({ ...BASE, OTEL_TRACES_EXPORTER: "zipkin" })).toBe(
      "traces are off: OTEL_TRACES_EXPORTER names no exporter but otlp or none"
    )
  })
})

describe("the endpoint", () => {
  it("the base endpoint gets /v1/traces, after its own path, without a doubled slash", () => {
    expect(config(BASE).url).toBe("http://127.0.0.1:4318/v1/traces")
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example/" }).url).toBe(
      "https://collector.example/v1/traces"
    )
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example/otel//" }).url).toBe(
      "https://collector.example/otel/v1/traces"
    )
  })

  it("the traces endpoint is used as given, and wins over the base one", () => {
    expect(
      config({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example:4318/custom/path" }).url
    ).toBe("https://traces.example:4318/custom/path")
    expect(config({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://h:1/x" }).url).toBe("http://h:1/x")
  })

  it("a value that is no http(s) URL: one warning naming the variable, not the value", () => {
    for (const bad of ["localhost:4318", "not a url", "ftp://host/v1/traces", "file:///tmp/x", "http://"]) {
      expect(warning({ OTEL_EXPORTER_OTLP_ENDPOINT: bad })).toBe(
        "traces are off: OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL"
      )
      expect(warning({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: bad })).toBe(
        "traces are off: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not an http(s) URL"
      )
    }
    expect(warning({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://user:hunter2@" })).not.toContain("hunter2")
  })
})

describe("the protocol", () => {
  it("http/json (the default) and http/protobuf are carried as named (any case); gRPC is refused", () => {
    expect(config(BASE).protocol).toBe("http/json")
    expect(config({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).protocol).toBe("http/json")
    expect(config({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "HTTP/Protobuf" }).protocol).toBe("http/protobuf")
    expect(config({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" }).url).toContain("/v1/traces")
    expect(warning({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toBe(
      "traces are off: OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf (gRPC is not supported)"
    )
    // The signal's own variable wins, either way.
    expect(
      config({
        ...BASE,
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json"
      }).protocol
    ).toBe("http/json")
    expect(warning({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" })).toContain(
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    )
  })
})

describe("the headers", () => {
  it("k=v lists, trimmed and percent-decoded; the traces list's keys win", () => {
    expect(config(BASE).headers).toEqual({})
    expect(
      config({
        ...BASE,
        OTEL_EXPORTER_OTLP_HEADERS: " api-key = abc%3D%3D , x-team=a%2Cb,",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-team=traces,authorization=Bearer%20t0k=n"
      }).headers
    ).toEqual({ "api-key": "abc==", "x-team": "traces", authorization: "Bearer t0k=n" })
  })

  it("bad syntax: one warning with the entry's position, never a value", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["a=1,novalue", "entry 2"],
      ["=secret-value", "entry 1"],
      ["bad key=secret-value", "entry 1"],
      ["a=%E0%A4%A", "entry 1"],
      ["a=line%0Abreak", "entry 1"]
    ]
    for (const [text, entry] of cases) {
      const line = warning({ ...BASE, OTEL_EXPORTER_OTLP_HEADERS: text })
      expect(line).toBe(
        `traces are off: OTEL_EXPORTER_OTLP_HEADERS: ${entry} is not key=value (percent-encoded; values are not shown)`
      )
      expect(line).not.toContain("secret")
    }
    expect(warning({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x" })).toContain(
      "OTEL_EXPORTER_OTLP_TRACES_HEADERS: entry 1"
    )
  })

  it("the list parser keeps everything after the first =", () => {
    expect(parseKeyValues("X", "a=b=c,,d=")).toEqual(Either.right({ a: "b=c", d: "" }))
  })
})

describe("the resource", () => {
  it("service name: OTEL_SERVICE_NAME, else service.name of the attributes, else the default", () => {
    expect(config(BASE).serviceName).toBe("pi-workflow-turns")
    expect(config({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs" }).serviceName).toBe(
      "from-attrs"
    )
    expect(
      config({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs", OTEL_SERVICE_NAME: " mine " })
        .serviceName
    ).toBe("mine")
    expect(config({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "service.name=" }).serviceName).toBe(
      "pi-workflow-turns"
    )
  })

  it("OTEL_RESOURCE_ATTRIBUTES: percent-decoded pairs (service.name taken out); bad syntax is a warning", () => {
    expect(
      config({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=dev,team=a%20b,service.name=x" })
        .resourceAttributes
    ).toEqual({ "deployment.environment": "dev", team: "a b" })
    expect(warning({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "a=1,b" })).toBe(
      "traces are off: OTEL_RESOURCE_ATTRIBUTES: entry 2 is not key=value (percent-encoded; values are not shown)"
    )
  })
})
