/**
 * Whether a stored run may continue on the workflow loaded now: a run resumes or activates only
 * on the very revision and source it was created from. Pure.
 */
import type { RunRecord } from "../store/run-store.ts"
import { SourceChanged } from "./errors.ts"
import type { RegisteredWorkflow } from "./registry.ts"

export const sourceProblem = (record: RunRecord, registered: RegisteredWorkflow): SourceChanged | null =>
  registered.fingerprint === record.sourceFingerprint && registered.revision === record.revision
    ? null
    : new SourceChanged({
        runId: record.runId,
        workflow: record.workflowName,
        expectedRevision: record.revision,
        foundRevision: registered.revision,
        expectedFingerprint: record.sourceFingerprint,
        foundFingerprint: registered.fingerprint
      })
