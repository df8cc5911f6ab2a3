/**
 * `PI_WORKFLOWS_DEFAULT_TIMEOUT_MS`: the limit of nodes that omit `timeoutMs` in this Pi
 * process (default 15 minutes). Explicit limits are untouched. It exists so an operator, or an
 * end-to-end test, can make stages that use the default time out sooner.
 */
export class InvalidDefaultTimeout extends Error {
  override readonly name = "InvalidDefaultTimeout"
}

/** The configured default, or undefined for the engine's own. */
export const defaultTimeoutFromEnv = (env: {
  readonly PI_WORKFLOWS_DEFAULT_TIMEOUT_MS?: string | undefined
}): number | undefined => {
  const raw = env.PI_WORKFLOWS_DEFAULT_TIMEOUT_MS
  if (raw === undefined || raw === "") return undefined
  const ms = Number(raw)
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(ms) || ms <= 0) {
    throw new InvalidDefaultTimeout(
      `PI_WORKFLOWS_DEFAULT_TIMEOUT_MS must be a positive whole number of milliseconds, got "${raw}"`
    )
  }
  return ms
}
