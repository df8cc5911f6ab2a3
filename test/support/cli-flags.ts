/**
 * Flags of the long-run scripts (`sim`, `sim:engine`, `crash:trials`): `--name value`
 * pairs and bare switches. A count that is not a non-negative integer ends the script with one
 * line and exit code 2.
 */
export const cliFlags = (args: ReadonlyArray<string> = process.argv.slice(2)) => {
  const flag = (name: string): string | undefined => {
    const index = args.indexOf(`--${name}`)
    return index < 0 ? undefined : args[index + 1]
  }
  const count = (name: string, fallback: number): number => {
    const raw = flag(name)
    if (raw === undefined) return fallback
    const value = Number(raw)
    if (!Number.isSafeInteger(value) || value < 0) {
      process.stderr.write(`--${name} must be a non-negative integer, got ${raw}\n`)
      process.exit(2)
    }
    return value
  }
  return { args, flag, count, has: (name: string) => args.includes(`--${name}`) }
}
