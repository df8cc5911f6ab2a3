/**
 * A throwaway PostgreSQL cluster for the tests: data directory and unix socket in one temp
 * directory, trust authentication, no TCP listener, fsync off (the tests never survive a power
 * loss). PostgreSQL refuses to run as root, so when the tests run as root the server runs as
 * `nobody` (via runuser) and owns only its temp directory.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface Cluster {
  readonly dir: string
  /** Superuser URL of the `postgres` database, over the unix socket. */
  readonly adminUrl: string
}

const SUPERUSER = "pwt"

const binDir = (): string => {
  for (const dir of [
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/17/bin"
  ]) {
    if (existsSync(join(dir, "initdb"))) return dir
  }
  const found = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" })
  if (found.status === 0 && found.stdout.trim() !== "") return join(found.stdout.trim(), "..")
  throw new Error("initdb not found: install PostgreSQL (Debian: apt-get install -y postgresql)")
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** Run a server binary, as `nobody` when we are root. */
const runPg = (bin: string, args: ReadonlyArray<string>) => {
  const [command, argv] = isRoot() ? ["runuser", ["-u", "nobody", "--", bin, ...args]] : [bin, [...args]]
  execFileSync(command, argv, { stdio: ["ignore", "ignore", "pipe"] })
}

/** The URL of database `name` on the cluster whose admin URL is `adminUrl`. */
export const databaseUrl = (adminUrl: string, name: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export const startCluster = (): Cluster => {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), "pwt-pg-"))
  if (isRoot()) {
    // nobody needs to enter the directory (mkdtemp makes it 0700) and own the data inside.
    chmodSync(dir, 0o755)
    const nobody = execFileSync("id", ["-u", "nobody"], { encoding: "utf8" }).trim()
    chownSync(dir, Number(nobody), Number(nobody))
  }
  const data = join(dir, "data")
  runPg(join(bin, "initdb"), ["-D", data, "-U", SUPERUSER, "-A", "trust", "--no-sync", "-E", "UTF8"])
  runPg(join(bin, "pg_ctl"), [
    "start",
    "-w",
    "-D",
    data,
    "-l",
    join(dir, "server.log"),
    "-o",
    `-c listen_addresses='' -c unix_socket_directories='${dir}' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`
  ])
  return { dir, adminUrl: `postgresql://${SUPERUSER}@localhost/postgres?host=${encodeURIComponent(dir)}` }
}

export const stopCluster = (cluster: Cluster) => {
  try {
    runPg(join(binDir(), "pg_ctl"), ["stop", "-m", "immediate", "-D", join(cluster.dir, "data")])
  } finally {
    rmSync(cluster.dir, { recursive: true, force: true })
  }
}
