/**
 * Compatibility with 0.1.0, the release before group commit. REMOVE IN 0.3.0.
 *
 * Group commit ships in 0.2.0 (CHANGELOG.md, [Unreleased]). During the rolling upgrade from
 * 0.1.0, a 0.2.0 gateway may meet a 0.1.0 worker, which refuses group jobs, and a 0.2.0 worker
 * may meet a 0.1.0 gateway, which adds jobs of one request. Upgrades go one release at a time
 * (docs/versioning.md): from 0.3.0 on, every gateway and worker a release can meet sends and takes
 * group jobs, so this module goes, and with it its three call sites: the gateway's resend
 * (creation-client.ts, 'failed' listener), the worker's job kinds (services/worker
 * creation-job.processor.ts) and the one-request reply in the worker's outcomeOf (metrics.ts).
 */
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationJobKind,
} from './creation-job.contract';
import {
  createLinksJobResultSchema,
  createLinksPayloadSchema,
  groupJob,
  issuePathsOf,
} from './creation-job.contract';

/** The job of one creation request that 0.1.0 gateways add and 0.1.0 workers take. */
export const CREATE_LINKS_JOB = 'create-links';

/**
 * How a 0.1.0 worker fails a group job: its processor parsed every job as one request and refused
 * what did not fit, before any statement. A worker of 0.2.0 words its own refusal differently
 * (`invalid creation job payload:`), so the two are never confused.
 */
export const REFUSED_BY_PREVIOUS_WORKER = 'invalid create-links payload:';

/** A job of one request, answered with that request's answer alone (no requestId). */
export const oneRequestJob: CreationJobKind<CreateLinksJobResult> = {
  name: CREATE_LINKS_JOB,
  dataOf: ([request]) => request,
  requestsOf: (data) => {
    const parsed = createLinksPayloadSchema.safeParse(data);
    return parsed.success
      ? { ok: true, requests: [parsed.data] }
      : { ok: false, issuePaths: issuePathsOf(parsed.error) };
  },
  replyOf: (answers) => answers[0].answer,
  answersOf: (returnvalue, requestIds) => {
    const parsed = createLinksJobResultSchema.safeParse(returnvalue);
    return parsed.success ? [{ requestId: requestIds[0], answer: parsed.data }] : undefined;
  },
};

/** A job to add: its kind, its id and its requests. */
export interface OutgoingJob {
  kind: CreationJobKind;
  jobId: string;
  requests: CreateLinksPayload[];
}

/**
 * The jobs that replace a group job a 0.1.0 worker refused (a rolling upgrade that reached the
 * gateways first), or undefined when the failure is anything else. That worker created nothing,
 * so each request still waiting goes again as a job of one request, which it takes and answers
 * as before group commit. Its id is the request's with `-alone`: the group's job keeps the first
 * request's id. Once only: a one-request job refused too is a failure like any other.
 */
export function resendAlone(
  failed: { kind: CreationJobKind; requests: readonly CreateLinksPayload[] },
  failedReason: string,
): OutgoingJob[] | undefined {
  if (failed.kind !== groupJob || !failedReason.startsWith(REFUSED_BY_PREVIOUS_WORKER)) {
    return undefined;
  }
  return failed.requests.map((request) => ({
    kind: oneRequestJob,
    jobId: `${request.requestId}-alone`,
    requests: [request],
  }));
}
