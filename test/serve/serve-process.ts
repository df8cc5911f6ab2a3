/**
 * The built `pi-workflow-turns serve` in a child process (no inherited environment beyond PATH,
 * HOME in `dir`), with the URL it printed: its port and access token. No vitest here.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
export const BIN = join(
  root,
  JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin["pi-workflow-turns"]
)

export interface Served {
  readonly child: ChildProcess
  readonly url: string
  readonly base: string
  readonly port: number
  readonly token: string
  /** Ask it to stop (SIGTERM); its exit code. */
  readonly stop: () => Promise<number | null>
}

/** `bin`: another build of the CLI (the PostgreSQL suite builds its own). */
export const startServe = (db: string, dir: string, bin = BIN): Promise<Served> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", "--db", db], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
    let out = ""
    let err = ""
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString()
    })
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (!out.includes("\n")) return
      const url = out.split("\n")[0] ?? ""
      const match = /^(http:\/\/127\.0\.0\.1:(\d+))\/\?token=([A-Za-z0-9_-]+)$/.exec(url)
      if (match === null) return reject(new Error(`serve printed ${JSON.stringify(url)}`))
      resolve({
        child,
        url,
        base: match[1] ?? "",
        port: Number(match[2]),
        token: match[3] ?? "",
        stop: () => {
          child.kill("SIGTERM")
          return exited
        }
      })
    })
    void exited.then((code) => reject(new Error(`serve exited ${code} before printing its URL: ${err}`)))
  })
