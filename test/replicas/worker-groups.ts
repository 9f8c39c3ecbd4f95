/**
 * Group commit as the workers' logs show it: each `creation job finished` line names the HTTP
 * request (`reqId`, the X-Request-Id the test sent, which says the gateway) and the group job
 * that carried it (`groupJobId`, or its own `jobId` when it led the group).
 */

export interface CreationLine {
  worker: string;
  reqId: string;
  /** The job that carried the request: its group's id. */
  groupId: string;
  entries: number;
  status: string;
}

/** The `creation job finished` line of a worker's JSON log, or null for any other line. */
export function parseCreationLine(worker: string, line: string): CreationLine | null {
  if (!line.includes('creation job finished')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const fields = parsed as Record<string, unknown>;
  if (fields.msg !== 'creation job finished') return null;
  const { reqId, jobId, groupJobId, entries, status } = fields;
  if (typeof reqId !== 'string' || typeof jobId !== 'string') return null;
  return {
    worker,
    reqId,
    groupId: typeof groupJobId === 'string' ? groupJobId : jobId,
    entries: typeof entries === 'number' ? entries : 0,
    status: typeof status === 'string' ? status : 'unknown',
  };
}

export interface GroupFigures {
  /** Requests each worker answered, by the gateway they came through. */
  requestsByWorkerAndGateway: Map<string, Map<string, number>>;
  /** Group jobs each worker wrote, and how many of them carried more than one request. */
  groupsByWorker: Map<string, { groups: number; shared: number; largest: number }>;
  /** Groups whose requests came through more than one gateway (the gatherer is per gateway). */
  mixedGateways: number;
}

/** `gatewayOf` reads the gateway from a request id (the test's own X-Request-Id). */
export function groupFigures(
  lines: readonly CreationLine[],
  gatewayOf: (reqId: string) => string | undefined,
): GroupFigures {
  const requestsByWorkerAndGateway = new Map<string, Map<string, number>>();
  const groups = new Map<string, { worker: string; requests: number; gateways: Set<string> }>();
  for (const line of lines) {
    const gateway = gatewayOf(line.reqId) ?? 'unknown';
    const byGateway = requestsByWorkerAndGateway.get(line.worker) ?? new Map<string, number>();
    byGateway.set(gateway, (byGateway.get(gateway) ?? 0) + 1);
    requestsByWorkerAndGateway.set(line.worker, byGateway);
    const key = `${line.worker} ${line.groupId}`;
    const group = groups.get(key) ?? { worker: line.worker, requests: 0, gateways: new Set() };
    group.requests += 1;
    group.gateways.add(gateway);
    groups.set(key, group);
  }
  const groupsByWorker = new Map<string, { groups: number; shared: number; largest: number }>();
  let mixedGateways = 0;
  for (const group of groups.values()) {
    const figures = groupsByWorker.get(group.worker) ?? { groups: 0, shared: 0, largest: 0 };
    figures.groups += 1;
    if (group.requests > 1) figures.shared += 1;
    figures.largest = Math.max(figures.largest, group.requests);
    groupsByWorker.set(group.worker, figures);
    if (group.gateways.size > 1) mixedGateways += 1;
  }
  return { requestsByWorkerAndGateway, groupsByWorker, mixedGateways };
}
