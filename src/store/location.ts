/**
 * What a controller-database location names: a `postgres://` or `postgresql://` URL selects
 * PostgreSQL (docs/postgres.md); anything else is a SQLite file path.
 */
export const isPostgresUrl = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location)
