// `node scripts/require-node.mjs "<what>"`: exit 0 on Node >= 22.19, else print one line saying
// what to run and exit 2. Plain JavaScript, so that it runs on the old Node it is there to catch
// (the npm scripts after it use flags such as --experimental-strip-types that Node 20 rejects).
// The same rule as src/node-version.ts (test/scripts/require-node.test.ts holds both to it).
const what = process.argv[2] ?? "this command"
const version = process.versions.node
const [major, minor] = version.split(".").map(Number)
if (!(major > 22 || (major === 22 && minor >= 19))) {
  process.stderr.write(
    `${what} needs Node.js >= 22.19 (this is ${version}): select Node 22 first, ` +
      `e.g. eval "$(bash scripts/node22-env.sh)", then run it again.\n`
  )
  process.exit(2)
}
