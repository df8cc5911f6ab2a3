/**
 * Reason text is stored in fallback facts and shown to the model: it must carry no secrets and
 * nothing that could steer a terminal. `redactReason` replaces common credential shapes and
 * strips control characters. Pure; applied before any reason is stored.
 */

export const REDACTED = "[REDACTED]"

const SENSITIVE_NAME =
  "[A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pwd|credential|auth(?!ors?\\b)|session|cookie|private)[A-Za-z0-9_.-]*"

const rules: ReadonlyArray<readonly [RegExp, string]> = [
  // PEM private-key blocks, also when cut off before their END line.
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, REDACTED],
  // Authorization schemes.
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // JSON Web Tokens.
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // Well-known key prefixes: sk-/pk- style API keys, GitHub, Slack, AWS, Google.
  [/\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}/g, REDACTED],
  [/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, REDACTED],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  // URLs with credentials: scheme://user:password@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/:@]+:[^\s/@]+@/gi, `$1${REDACTED}@`],
  // KEY=value environment dumps (every UPPER_CASE assignment) and name=value / name: value
  // pairs whose name looks sensitive, quoted or not.
  [/(^|[\s;,{(])([A-Z][A-Z0-9_]{1,})=("[^"]*"|'[^']*'|[^\s;,]*)/g, `$1$2=${REDACTED}`],
  [
    new RegExp(String.raw`(${SENSITIVE_NAME}["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;}]+)`, "gi"),
    `$1${REDACTED}`
  ]
]

/** C0 controls except tab and newline, DEL, C1 controls, and bidirectional overrides/isolates. */
export const isControlChar = (code: number): boolean =>
  (code <= 0x1f && code !== 0x09 && code !== 0x0a) ||
  (code >= 0x7f && code <= 0x9f) ||
  (code >= 0x202a && code <= 0x202e) ||
  (code >= 0x2066 && code <= 0x2069)

const stripControls = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) if (!isControlChar(text.charCodeAt(i))) out += text[i]
  return out
}

/** The reason with credentials replaced by `[REDACTED]` and control characters removed. */
export const redactReason = (text: string): string => {
  let out = stripControls(text)
  for (const [pattern, replacement] of rules) out = out.replace(pattern, replacement)
  return out
}

/**
 * Free text an operator may read back (command output, arguments): the same rules as
 * `redactReason`, so one set of credential shapes serves every stored text.
 */
export const redactSecrets = (text: string): string => redactReason(text)
