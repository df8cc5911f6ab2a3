/**
 * FastCheck arbitraries for the credential catalogue (src/domain/redact.ts): one per shape,
 * each a realistic secret (`needle`, what must never be shown) in the text that carries it
 * (`carrier`: the variable, header, flag or URL around it), and arbitrary text to embed it in.
 */
import { FastCheck as fc } from "effect"

export interface SecretSample {
  readonly shape: string
  /** The secret itself: no output may contain it. */
  readonly needle: string
  /** The secret in its context, as a workflow's error or output would carry it. */
  readonly carrier: string
}

const chars = (set: string, min: number, max: number) =>
  fc.array(fc.constantFrom(...set), { minLength: min, maxLength: max }).map((a) => a.join(""))

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
const LOWER = "abcdefghijklmnopqrstuvwxyz"
const DIGITS = "0123456789"
const ALNUM = UPPER + LOWER + DIGITS

const alnum = (min: number, max: number) => chars(ALNUM, min, max)
// Mixed case and a digit, as generated keys are (and never all one letter).
const mixed = (min: number, max: number) =>
  fc
    .tuple(chars(UPPER, 1, 1), chars(LOWER, 1, 1), chars(DIGITS, 1, 1), alnum(min - 3, max - 3))
    .map((parts) => parts.join(""))
const password = fc
  .tuple(chars(LOWER + UPPER, 1, 1), chars(DIGITS, 1, 1), chars(`${ALNUM}!#%^*_.~+`, 6, 22))
  .map((parts) => parts.join(""))

const sample = (shape: string, arbitrary: fc.Arbitrary<string>, carry: (secret: string) => string) =>
  arbitrary.map((needle): SecretSample => ({ shape, needle, carrier: carry(needle) }))

/** A password under a name, in the form `carry` writes. */
const named = (shape: string, names: fc.Arbitrary<string>, carry: (name: string, secret: string) => string) =>
  fc
    .tuple(names, password)
    .map(([name, needle]): SecretSample => ({ shape, needle, carrier: carry(name, needle) }))

const SENSITIVE_WORDS = [
  "TOKEN",
  "SECRET",
  "PASSWORD",
  "PASSWD",
  "PWD",
  "API_KEY",
  "APIKEY",
  "CREDENTIAL",
  "CREDENTIALS",
  "PRIVATE_KEY",
  "AUTH",
  "AUTH_TOKEN"
] as const
const sensitiveName = fc
  .tuple(
    fc.constantFrom("", "GITHUB_", "DB_", "MY_APP_", "X_", "OPENAI_"),
    fc.constantFrom(...SENSITIVE_WORDS)
  )
  .map(([prefix, word]) => `${prefix}${word}`)

/** Every catalogue shape, each in one or more of its usual contexts. */
export const secretSample: fc.Arbitrary<SecretSample> = fc.oneof(
  sample(
    "GitHub token",
    fc.tuple(fc.constantFrom("ghp", "gho", "ghs", "ghu", "ghr"), alnum(36, 36)).map(([p, s]) => `${p}_${s}`),
    (s) => s
  ),
  sample(
    "GitHub fine-grained token",
    chars(`${ALNUM}_`, 40, 82).map((s) => `github_pat_${s}`),
    (s) => `token ${s}`
  ),
  sample("Authorization: Bearer", chars(`${ALNUM}._~+/-`, 20, 60), (s) => `Authorization: Bearer ${s}`),
  sample(
    "Authorization: Basic",
    fc.string({ minLength: 15, maxLength: 40 }).map((s) => Buffer.from(s).toString("base64")),
    (s) => `-H "Authorization: Basic ${s}"`
  ),
  sample("Authorization: Token", mixed(24, 40), (s) => `authorization: token ${s}`),
  sample("bare bearer", chars(`${ALNUM}._~+/-`, 20, 60), (s) => `bearer ${s}`),
  sample(
    "Stripe key",
    fc
      .tuple(fc.constantFrom("sk_live", "sk_test", "rk_live", "pk_live"), alnum(24, 99))
      .map(([p, s]) => `${p}_${s}`),
    (s) => s
  ),
  sample(
    "npm token",
    alnum(36, 36).map((s) => `npm_${s}`),
    (s) => s
  ),
  sample(
    "GitLab token",
    chars(`${ALNUM}_-`, 20, 20).map((s) => `glpat-${s}`),
    (s) => s
  ),
  sample(
    "AWS access key ID",
    chars(UPPER + DIGITS, 16, 16).map((s) => `AKIA${s}`),
    (s) => s
  ),
  sample("AWS secret key (bare)", mixed(40, 40), (s) => `AWS secret ${s}`),
  sample(
    "AWS secret key (with slashes)",
    fc.tuple(mixed(20, 20), mixed(19, 19)).map(([a, b]) => `${a}/${b}`),
    (s) => `aws: ${s}`
  ),
  sample("aws_secret_access_key=", mixed(40, 40), (s) => `aws_secret_access_key=${s}`),
  sample(
    "Slack token",
    fc
      .tuple(fc.constantFrom("xoxb", "xoxp", "xoxa", "xoxe", "xoxs"), chars(DIGITS, 12, 12), alnum(24, 24))
      .map(([p, n, s]) => `${p}-${n}-${s}`),
    (s) => s
  ),
  sample(
    "Slack webhook URL",
    fc.tuple(alnum(9, 9), alnum(9, 9), alnum(24, 24)).map(([t, b, s]) => `T${t}/B${b}/${s}`),
    (s) => `https://hooks.slack.com/services/${s}`
  ),
  sample(
    "Discord webhook URL",
    fc.tuple(chars(DIGITS, 18, 18), chars(`${ALNUM}_-`, 68, 68)).map(([id, s]) => `${id}/${s}`),
    (s) => `https://discord.com/api/webhooks/${s}`
  ),
  sample("mysql -pPASSWORD", password, (s) => `mysql -u root -p${s} app`),
  sample("-pPASSWORD", password, (s) => `-p${s}`),
  sample("--password X", password, (s) => `--password ${s}`),
  sample("--password=X", password, (s) => `--password=${s}`),
  sample("--token X", password, (s) => `--token ${s}`),
  sample("user:pass@host URL", password, (s) => `https://deploy:${s}@example.invalid/repo.git`),
  sample("database URL", password, (s) => `postgres://admin:${s}@db.internal:5432/app`),
  sample(
    "PEM private key",
    chars(`${ALNUM}+/`, 40, 80),
    (s) => `-----BEGIN RSA PRIVATE KEY-----\n${s}\n${s}\n-----END RSA PRIVATE KEY-----`
  ),
  sample(
    "PEM private key (cut off)",
    chars(`${ALNUM}+/`, 40, 80),
    (s) => `-----BEGIN OPENSSH PRIVATE KEY-----\n${s}`
  ),
  sample(
    "JWT",
    fc
      .tuple(alnum(10, 30), alnum(10, 30), chars(`${ALNUM}_-`, 20, 43))
      .map(([a, b, c]) => `eyJ${a}.eyJ${b}.${c}`),
    (s) => s
  ),
  sample(
    "Google API key",
    chars(`${ALNUM}_-`, 35, 35).map((s) => `AIza${s}`),
    (s) => s
  ),
  sample(
    "OpenAI key",
    mixed(48, 48).map((s) => `sk-${s}`),
    (s) => s
  ),
  sample(
    "OpenAI project key",
    chars(`${ALNUM}_-`, 40, 120).map((s) => `sk-proj-${s}`),
    (s) => s
  ),
  sample(
    "Anthropic key",
    chars(`${ALNUM}_-`, 40, 95).map((s) => `sk-ant-api03-${s}`),
    (s) => s
  ),
  named("NAME=value", sensitiveName, (name, s) => `${name}=${s}`),
  named("name: value", sensitiveName, (name, s) => `${name.toLowerCase()}: ${s}`),
  named(
    "JSON field",
    fc.constantFrom("api_key", "apiKey", "client_secret", "password", "accessToken", "private_key"),
    (name, s) => JSON.stringify({ [name]: s })
  ),
  sample('export NAME="value"', password, (s) => `export OPENAI_API_KEY="${s}"`)
)

/** Arbitrary text to put around a secret: printable, any Unicode, or raw code points. */
export const surrounding: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 })
)

/** The secret's carrier embedded in arbitrary text (set apart by spaces, as words are). */
export const embedded: fc.Arbitrary<{ readonly sample: SecretSample; readonly text: string }> = fc
  .tuple(surrounding, secretSample, surrounding)
  .map(([before, sample, after]) => ({ sample, text: `${before} ${sample.carrier} ${after}` }))
