/**
 * The house's dependency directions, checked by `npm run check` (`npm run depcruise`):
 * the domain is pure and stands alone, Pi is reached only through the extension adapter, SQL only
 * through the stores (and the test kits), the application never reaches into the adapter, and no
 * module imports itself through a circle.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "domain-is-pure",
      comment: "domain/ is policy and data: Effect and hashing only, no I/O, no other layer of src/",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { pathNot: ["^src/domain/", "^node_modules/effect/", "^crypto$"] }
    },
    {
      name: "only-extension-imports-pi",
      comment: "Pi and its packages are reached through the adapter in extension/ only",
      severity: "error",
      from: { pathNot: "^src/extension/" },
      to: { path: "^node_modules/(@earendil-works/|typebox/)" }
    },
    {
      name: "only-store-imports-sql",
      comment:
        "SQL (@effect/sql, @effect/sql-pg, pg, better-sqlite3, Reactivity) belongs to store/ and the test kits",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/store/", "^src/testing/", "^src/testing[.]ts$"] },
      to: {
        path: "^node_modules/(@effect/sql|@effect/sql-pg|@effect/experimental|better-sqlite3|pg|pg-[a-z-]+)/",
        dependencyTypesNot: ["type-only"]
      }
    },
    {
      name: "only-store-imports-sql-types",
      comment: "the same for type imports",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/store/", "^src/testing/", "^src/testing[.]ts$"] },
      to: {
        path: "^node_modules/(@effect/sql|@effect/sql-pg|@effect/experimental|better-sqlite3|pg|pg-[a-z-]+)/",
        dependencyTypes: ["type-only"]
      }
    },
    {
      name: "app-never-imports-extension",
      comment: "the application owns its inputs; the Pi adapter depends on it, not the other way",
      severity: "error",
      from: { path: "^src/app/" },
      to: { path: "^src/extension/" }
    },
    {
      name: "library-never-imports-extension",
      comment: "the library entries must load without Pi",
      severity: "error",
      from: { path: "^src/(index|testing)[.]ts$" },
      to: { path: "^src/extension/" }
    },
    {
      name: "no-circular",
      comment: "an import circle makes load order matter and hides which module owns a concept",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "no-unresolvable",
      comment: "an import that resolves nowhere would slip past the rules above",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "require", "node", "default"],
      mainFields: ["module", "main", "types"]
    }
  }
}
