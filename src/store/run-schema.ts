/** DDL for runs, step records, agent requests and the run queue (filled in by the engine). */
export const runSchemaStatements: ReadonlyArray<string> = []
