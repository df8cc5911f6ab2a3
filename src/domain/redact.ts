/**
 * The one redactor: every text that leaves the process (toward the model, the session file, the
 * TUI, notifications, the CLI, logs) passes `redactText`, which removes invisible and control
 * characters and replaces every credential of the catalogue below with `[REDACTED]`. Pure,
 * synchronous and idempotent (the abort path builds its facts before `ctx.abort()`), and
 * dependency-free (the extension entry loads it without Effect). Stored records keep what the
 * workflow wrote; only what is shown is redacted.
 *
 * The catalogue: every shape of secret, one named rule each, applied in order. The rules keep
 * the text around a secret (the variable name, the header, the URL's host), and never consume a
 * quote or a backslash they did not open: redacting JSON text keeps it JSON. Redacting twice
 * changes nothing more. docs/extension.md ("Redaction") lists the shapes.
 */

export const REDACTED = "[REDACTED]"

/** One catalogue entry: what it finds and what it leaves. */
export interface CredentialRule {
  readonly name: string
  /** A cheap test the text must pass before the rule's pattern is run over it. */
  readonly guard: RegExp
  readonly pattern: RegExp
  readonly replace: (match: string, ...groups: ReadonlyArray<unknown>) => string
}

const all = () => REDACTED
const keep =
  (...indexes: ReadonlyArray<number>) =>
  (_match: string, ...groups: ReadonlyArray<unknown>): string =>
    `${indexes.map((i) => (typeof groups[i - 1] === "string" ? groups[i - 1] : "")).join("")}${REDACTED}`

// A value after `=`/`:`: quoted (kept quoted), JSON-escaped quoted, or a bare word that stops at
// quotes, backslash-quote, separators and escape sequences. A value that opens a JSON array or
// object is no bare word: its strings are searched on their own (and the JSON stays JSON).
const QUOTED = String.raw`"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|\\"(?:[^"\\\n]|\\[^"\n])*\\"`
const BARE = String.raw`(?![[{])(?:\\[^"'\s]|[^\s,;}"'\\\u001b])+`
const VALUE = `(?:${QUOTED}|${BARE})`

/** A redacted value keeps its quotes, so JSON and shell text stay well formed. */
const redactValue = (value: string): string => {
  if (value.startsWith('\\"')) return `\\"${REDACTED}\\"`
  const first = value[0]
  return first === '"' || first === "'" ? `${first}${REDACTED}${first}` : REDACTED
}

// Opaque-token bodies: 20+ characters, or 8+ with a digit or symbol ("Basic configuration" is prose).
const tokenBody = (chars: string) => `(?=[${chars}]{20}|[${chars}]*[0-9._~+/=-])[${chars}]{8,}`
const TOKEN_CHARS = "A-Za-z0-9._~+/-"

// A URL's path after the part that is kept, up to whitespace, quotes or closing brackets.
const URL_REST = String.raw`[^\s"'<>\\)]+`
const HOST_PART = String.raw`[^\s/"'<>\\@]*`
const HOST = String.raw`[^\s/"'<>\\@]+`

const AUTH_SCHEMES = /^(?:bearer|basic|token|digest|negotiate|bot)$/i

/** Names whose value is a credential: `GITHUB_TOKEN`, `db_password`, `apiKey`, `Authorization`. */
export const isSensitiveName = (name: string): boolean => {
  // Our own non-secret fields (a lease's fencing token) and counts of model tokens.
  if (/claim_?token|tokens$/i.test(name)) return false
  return (
    /token|secret|passw(?:or)?d|pwd|credential|cookie|api_?key|apikey|private_?key/i.test(name) ||
    /auth(?!ors?\b|ority|ored\b)/i.test(name) ||
    // *_KEY, *-key, camelCase *Key (a bare "key" is too often a sort or map key).
    /[_.-]key$|[a-z0-9]Key$|^[A-Z0-9_]+KEY$/.test(name) ||
    /(?:^|[_.-])pass(?:phrase)?$/i.test(name)
  )
}

// The AWS secret access key: 40 base64 characters, recognised only near an AWS or secret word.
const AWS_SECRET_CONTEXT = /aws|secret|AKIA|ASIA/i
const AWS_WINDOW = 80
const awsSecret = (match: string, offset: number, text: string): string => {
  if (/^[0-9a-f]+$/i.test(match) || !/[A-Z]/.test(match) || !/[a-z]/.test(match)) return match
  const around = text.slice(Math.max(0, offset - AWS_WINDOW), offset + match.length + AWS_WINDOW)
  return AWS_SECRET_CONTEXT.test(around) ? REDACTED : match
}

export const CREDENTIAL_RULES: ReadonlyArray<CredentialRule> = [
  {
    guard: /PRIVATE KEY/,
    name: "private key block (PEM, OpenSSH, PGP), also when cut off before its END line",
    pattern:
      /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[^"\\]|\\[^"])*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:[^"\\]|\\[^"])*)/g,
    replace: all
  },
  {
    guard: /authorization/i,
    name: "Authorization / Proxy-Authorization header value",
    pattern:
      /\b((?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?)(?:(bearer|basic|token|digest|negotiate|bot)[ \t]+)?([^\s"'\\,;]+)/gi,
    replace: (_m, head, scheme) =>
      `${String(head)}${typeof scheme === "string" ? `${scheme} ` : ""}${REDACTED}`
  },
  {
    guard: /hook/i,
    name: "webhook URL (hooks.slack.com, Discord, any webhook host or /webhooks/ path)",
    pattern: new RegExp(
      String.raw`(https?://(?:hooks\.${HOST}|${HOST_PART}webhook${HOST_PART}|${HOST}(?:/[^\s/"'<>\\?#]+)*?/(?:api/(?:v\d+/)?)?webhooks?[a-z0-9]*)/)${URL_REST}`,
      "gi"
    ),
    replace: keep(1)
  },
  {
    guard: /:\/\//,
    name: "user:password@ in a URL",
    // The password may hold any character but a slash (an unencoded "#" or "?" included). The
    // user name stays, as does a password already masked (`***`, as database-pg.ts shows it).
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"'\\@]*):([^\s/"'\\]*)@/gi,
    replace: (match, scheme, user, password) => {
      if (/^\*+$/.test(String(password))) return match
      const name = String(user)
      return `${String(scheme)}${name === "" || String(password) === "" ? "" : `${name}:`}${REDACTED}@`
    }
  },
  {
    guard: /gh[pousr]_|github_pat_/,
    name: "GitHub token",
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g,
    replace: all
  },
  {
    guard: /\bgl[a-z]+-/,
    name: "GitLab token",
    pattern: /\bgl(?:pat|dt|rt|ptt|soat|cbt|oas|ft|imt|agent)-[A-Za-z0-9_-]{16,}/g,
    replace: all
  },
  {
    guard: /_(?:live|test)_|whsec_/,
    name: "Stripe key or webhook secret",
    pattern: /\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{16,})/g,
    replace: all
  },
  { guard: /npm_/, name: "npm token", pattern: /\bnpm_[A-Za-z0-9]{20,}/g, replace: all },
  {
    guard: /xox|xapp-/,
    name: "Slack token",
    pattern: /\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}/g,
    replace: all
  },
  {
    guard: /A(?:KI|SI|BI|CC)A/,
    name: "AWS access key ID",
    pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g,
    replace: all
  },
  { guard: /AIza/, name: "Google API key", pattern: /\bAIza[0-9A-Za-z_-]{30,}/g, replace: all },
  // sk-ant-/sk-proj- style keys always; a bare sk- key when mixed case, as real keys are and
  // run-ID slugs (lowercase) never are.
  {
    guard: /sk-/,
    name: "OpenAI / Anthropic key",
    pattern:
      /\bsk-(?:(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{10,}|(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,})/g,
    replace: all
  },
  { guard: /hf_/, name: "Hugging Face token", pattern: /\bhf_[A-Za-z0-9]{30,}/g, replace: all },
  {
    guard: /SG\./,
    name: "SendGrid key",
    pattern: /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g,
    replace: all
  },
  {
    guard: /eyJ/,
    name: "JSON Web Token",
    pattern: /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
    replace: all
  },
  {
    guard: /bearer|basic|token/i,
    name: "Bearer / Basic / Token credential",
    pattern: new RegExp(String.raw`\b(bearer|basic|token)([ \t]+)${tokenBody(TOKEN_CHARS)}=*`, "gi"),
    replace: keep(1, 2)
  },
  {
    guard: /--/,
    name: "--password / --token / --secret / --api-key option value",
    pattern: new RegExp(
      String.raw`(--(?:[A-Za-z0-9]+[-_])*(?:password|passwd|pass|pwd|token|secret|api[-_]?key|apikey|access[-_]?key|private[-_]?key|credentials?)\b)(=|[ \t]+)(?!-)(${VALUE})`,
      "gi"
    ),
    replace: (_m, flag, separator, value) =>
      `${String(flag)}${String(separator)}${redactValue(String(value))}`
  },
  {
    guard: /mysql|mariadb/i,
    name: "mysql-style -pPASSWORD",
    pattern: /(\b(?:mysql\w*|mariadb[\w-]*)\b[^\n]*?[ \t])-p([^\s"'\\-][^\s"'\\]*)/gi,
    replace: (_m, head) => `${String(head)}-p${REDACTED}`
  },
  {
    guard: /-p/,
    name: "-pPASSWORD with letters and digits",
    pattern: /(^|[ \t])-p(?=[^\s"'\\]*[A-Za-z])(?=[^\s"'\\]*[0-9])([^\s"'\\-][^\s"'\\]{7,})/gm,
    replace: (_m, head) => `${String(head)}-p${REDACTED}`
  },
  {
    guard: AWS_SECRET_CONTEXT,
    name: "AWS secret access key near an AWS or secret word",
    pattern: /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    replace: (match, offset, text) =>
      typeof offset === "number" && typeof text === "string" ? awsSecret(match, offset, text) : match
  }
]

const SENSITIVE_WORD = /token|secret|pass|pwd|credential|cookie|key|auth/i

// Only a name and its separator: the value is read after them (`redactNamedValues`), so the
// quoted value of an ordinary name is still searched for the secrets inside it.
const NAMED = /(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)(\\?["']?[ \t]*[:=][ \t]*)/g
const VALUE_AT = new RegExp(VALUE, "y")

/** `NAME=value` pairs: a sensitive name's value is redacted; scanning continues after the separator. */
const redactNamedValues = (text: string): string => {
  if (!SENSITIVE_WORD.test(text)) return text
  const names = new RegExp(NAMED)
  let out = ""
  let from = 0
  for (let found = names.exec(text); found !== null; found = names.exec(text)) {
    const [whole, name = "", separator = ""] = found
    if (!isSensitiveName(name)) continue
    VALUE_AT.lastIndex = found.index + whole.length
    const value = VALUE_AT.exec(text)?.[0]
    // `Authorization: Bearer …` was handled by its own rule, and `scheme://` is no value.
    if (value === undefined || AUTH_SCHEMES.test(value) || value.startsWith("//")) continue
    out += `${text.slice(from, found.index)}${name}${separator}${redactValue(value)}`
    from = VALUE_AT.lastIndex
    names.lastIndex = from
  }
  return from === 0 ? text : out + text.slice(from)
}

/**
 * The text with every catalogue credential replaced by `[REDACTED]`: the shapes above in order,
 * then `NAME=value` / `name: value` pairs whose name is sensitive (`isSensitiveName`).
 */
export const redactCredentials = (text: string): string => {
  let out = text
  for (const rule of CREDENTIAL_RULES) {
    if (!rule.guard.test(out)) continue
    // Regexes are global: replace resets lastIndex, so the shared instances are safe to reuse.
    out = out.replace(rule.pattern, (match: string, ...rest: Array<unknown>) => rule.replace(match, ...rest))
  }
  return redactNamedValues(out)
}

/**
 * Characters that must never reach a display or the model: C0 controls except tab and newline,
 * DEL, C1 controls, bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E,
 * U+200F, U+202A–U+202E, U+2066–U+2069) and zero-width characters (U+200B–U+200D, U+2060,
 * U+FEFF), which can hide or reorder text (and split a secret so no pattern sees it).
 */
export const isControlChar = (code: number): boolean =>
  (code <= 0x1f && code !== 0x09 && code !== 0x0a) ||
  (code >= 0x7f && code <= 0x9f) ||
  code === 0x061c ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x202a && code <= 0x202e) ||
  code === 0x2060 ||
  (code >= 0x2066 && code <= 0x2069) ||
  code === 0xfeff

// The same set as `isControlChar`, for one pass over the text.
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g

/** The text without control, bidirectional and zero-width characters. */
export const stripInvisible = (text: string): string => text.replace(INVISIBLE, "")

/** The text as it may be shown: invisible characters removed, credentials redacted. */
export const redactText = (text: string): string => redactCredentials(stripInvisible(text))

/** Reason text for fallback facts (event-policy.ts): the one redactor. */
export const redactReason = redactText

/** Free text an operator may read back (command output, arguments): the one redactor. */
export const redactSecrets = redactText

/** Nesting beyond which values are not walked (tool replies and message details are shallow). */
const MAX_DEPTH = 64

/**
 * A JSON-like value with every string in it (keys too) passed through `redactText`; other
 * values are kept. Arrays and plain objects are copied; deeper than 64 levels, a value is
 * replaced by `[REDACTED]` rather than walked.
 */
export const redactDeep = (value: unknown, depth = 0): unknown => {
  if (typeof value === "string") return redactText(value)
  if (typeof value !== "object" || value === null) return value
  if (depth >= MAX_DEPTH) return REDACTED
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) out[redactText(key)] = redactDeep(item, depth + 1)
  return out
}

/** `redactDeep` for a record (message details, tool-result details). */
export const redactRecord = (record: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(record)) out[redactText(key)] = redactDeep(item, 1)
  return out
}
