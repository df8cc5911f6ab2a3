/**
 * Redaction of common credential shapes in free text (command output, error reasons) before
 * it is stored or shown to the model. Pure and conservative: it replaces what looks like a
 * secret and keeps the rest readable, so an operator can still tell what happened.
 */

const MARK = "[redacted]"

// Ordered: whole blocks first, then key=value pairs, then bare token shapes.
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  // PEM private keys (any algorithm), including an unterminated block at the end of the text.
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, MARK],
  // Authorization headers and bearer/basic credentials.
  [/\b(authorization\s*[:=]\s*)(?:bearer|basic|token)?\s*[^\s"',;]+/gi, `$1${MARK}`],
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${MARK}`],
  // URL user info: scheme://user:password@host
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${MARK}@`],
  // NAME=value where the name says it is secret (environment dumps, .env files, CLI flags).
  [
    /\b([A-Za-z0-9_.-]*(?:secret|token|password|passwd|pwd|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_.-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s"',;]+)/gi,
    `$1$2${MARK}`
  ],
  // Well-known token prefixes (GitHub, Slack, OpenAI/Anthropic-style, AWS access key IDs, JWTs).
  [/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b/g, MARK],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g, MARK],
  [/\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}\b/g, MARK],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, MARK],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, MARK]
]

/** The text with credential-shaped substrings replaced by `[redacted]`. */
export const redactSecrets = (text: string): string =>
  RULES.reduce((current, [pattern, replacement]) => current.replace(pattern, replacement), text)
