import { setTimeout as delay } from 'node:timers/promises';
import type { HttpResponse } from '@linkservice/testing';
import { sendRequest } from '@linkservice/testing';
import { createdLinks, PERSON_USER_AGENT } from '../faults/load';
import type { KnownLink } from '../faults/load';

/** One app of the load: its live secret and its link host. */
export interface LoadApp {
  appId: string;
  secret: string;
  linkHost: string;
}

/** Where the load goes: every gateway's API base and every redirect's URL, by name. */
export interface Replicas {
  gateways: readonly { name: string; apiUrl: string }[];
  redirects: readonly { name: string; url: string }[];
}

export interface CreationRecord {
  app: string;
  kind: 'single' | 'batch' | 'idempotent-first' | 'idempotent-retry';
  gateway: string;
  reqId: string;
  status: number;
  /** The markers sent, in order (each entry's title). */
  markers: string[];
  /** Per marker: the link created for it, or the refusal's code. */
  outcomes: ({ ok: true; link: KnownLink } | { ok: false; code: string })[];
  replayed: boolean;
  idempotencyKey?: string;
}

export interface RedirectRecord {
  redirect: string;
  alias: string;
  status: number;
}

export interface ReadRecord {
  gateway: string;
  linkId: string;
  status: number;
}

export interface LoadPlan {
  /** Apps below the hourly limit: creations of every kind, then reads and redirects of them. */
  apps: readonly LoadApp[];
  /** An app sent more creations than the hourly limit allows, through both gateways at once. */
  limited: LoadApp;
  singlesPerApp: number;
  batchesPerApp: number;
  batchSize: number;
  idempotentPairsPerApp: number;
  limitedSingles: number;
  limitedBatches: number;
  /** Redirects of each created link, spread over the redirects (the first one is a cache miss). */
  redirectsPerLink: number;
  /** Requests in flight at once. */
  concurrency: number;
  tag: string;
}

export interface LoadRecords {
  creations: CreationRecord[];
  reads: ReadRecord[];
  redirects: RedirectRecord[];
}

type Task = () => Promise<void>;

/**
 * The mixed load of the replicas tier: creations (single, batch, an Idempotency-Key retried
 * through the other gateway, past the hourly limit) start in a shuffled order through both
 * gateways, and each created link is read and followed through both redirects as soon as it
 * exists, so reads, redirects and creations run side by side. `concurrency` requests at a time.
 */
export async function runMixedLoad(replicas: Replicas, plan: LoadPlan): Promise<LoadRecords> {
  const records: LoadRecords = { creations: [], reads: [], redirects: [] };
  const queue: Task[] = [];
  let sequence = 0;
  const nextId = () => `${plan.tag}-${++sequence}`;
  const gatewayAt = (n: number) => replicas.gateways[n % replicas.gateways.length]!;
  const redirectAt = (n: number) => replicas.redirects[n % replicas.redirects.length]!;

  // Reads and redirects of a new link go among the creations still queued, not after them all.
  const enqueue = (task: Task) =>
    queue.splice(Math.floor(Math.random() * (queue.length + 1)), 0, task);
  const followUp = (app: LoadApp, link: KnownLink, n: number) => {
    enqueue(async () => {
      const gateway = gatewayAt(n + 1);
      const res = await sendRequest(`${gateway.apiUrl}/links/${link.id}`, { key: app.secret });
      records.reads.push({ gateway: gateway.name, linkId: link.id, status: res.status });
    });
    for (let r = 0; r < plan.redirectsPerLink; r++) {
      const redirect = redirectAt(n + r);
      enqueue(async () => {
        const res = await sendRequest(`${redirect.url}/${link.alias}`, {
          host: app.linkHost,
          headers: { 'user-agent': PERSON_USER_AGENT },
        });
        records.redirects.push({ redirect: redirect.name, alias: link.alias, status: res.status });
      });
    }
  };

  const create = async (
    app: LoadApp,
    kind: CreationRecord['kind'],
    gatewayIndex: number,
    markers: string[],
    idempotencyKey?: string,
  ): Promise<CreationRecord> => {
    const gateway = gatewayAt(gatewayIndex);
    const reqId = `${gateway.name}-${nextId()}`;
    const single = markers.length === 1 && kind !== 'batch';
    const entries = markers.map((marker, index) => ({
      // Half the batch entries get a caller alias, half a generated one.
      ...(index % 2 === 0 && { alias: marker }),
      webFallbackUrl: `https://example.com/${marker}`,
      title: marker,
    }));
    let res: HttpResponse | undefined;
    // A retry that meets its first request still running waits for it, and answers 409 only past
    // the creation timeout: then it is sent again, as the API asks.
    for (let attempt = 0; attempt < 5; attempt++) {
      res = await sendRequest(`${gateway.apiUrl}${single ? '/links' : '/links/batch'}`, {
        method: 'POST',
        key: app.secret,
        body: single ? entries[0] : { links: entries },
        headers: {
          'x-request-id': reqId,
          ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKey }),
        },
      });
      if (res.status !== 409) break;
      await delay(1_000);
    }
    const record: CreationRecord = {
      app: app.appId,
      kind,
      gateway: gateway.name,
      reqId,
      status: res!.status,
      markers,
      outcomes: outcomesOf(res!, markers.length, single),
      replayed: res!.headers.get('idempotent-replayed') === 'true',
      ...(idempotencyKey !== undefined && { idempotencyKey }),
    };
    records.creations.push(record);
    if (!record.replayed) {
      for (const outcome of record.outcomes) {
        if (outcome.ok) followUp(app, outcome.link, sequence);
      }
    }
    return record;
  };

  const creations: Task[] = [];
  let n = 0;
  for (const app of plan.apps) {
    for (let i = 0; i < plan.singlesPerApp; i++) {
      const g = n++;
      creations.push(async () => void (await create(app, 'single', g, [nextId()])));
    }
    for (let i = 0; i < plan.batchesPerApp; i++) {
      const g = n++;
      const id = nextId();
      const markers = Array.from({ length: plan.batchSize }, (_, e) => `${id}-b${e}`);
      creations.push(async () => void (await create(app, 'batch', g, markers)));
    }
    for (let i = 0; i < plan.idempotentPairsPerApp; i++) {
      const g = n++;
      const marker = nextId();
      const key = `key-${marker}`;
      // Every other pair: the retry is sent while the first is still running; else after it.
      const together = i % 2 === 0;
      creations.push(async () => {
        const first = create(app, 'idempotent-first', g, [marker], key);
        if (!together) await first;
        await Promise.all([first, create(app, 'idempotent-retry', g + 1, [marker], key)]);
      });
    }
  }
  for (let i = 0; i < plan.limitedSingles; i++) {
    const g = n++;
    creations.push(async () => void (await create(plan.limited, 'single', g, [nextId()])));
  }
  for (let i = 0; i < plan.limitedBatches; i++) {
    const g = n++;
    const id = nextId();
    const markers = Array.from({ length: plan.batchSize }, (_, e) => `${id}-b${e}`);
    creations.push(async () => void (await create(plan.limited, 'batch', g, markers)));
  }
  queue.push(...shuffle(creations));

  // Each runner takes the next task; a creation queues its reads and redirects behind the rest.
  let inFlight = 0;
  const runner = async () => {
    for (;;) {
      const task = queue.shift();
      if (!task) {
        if (inFlight === 0) return;
        await delay(5);
        continue;
      }
      inFlight += 1;
      try {
        await task();
      } finally {
        inFlight -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: plan.concurrency }, runner));
  return records;
}

function outcomesOf(res: HttpResponse, count: number, single: boolean): CreationRecord['outcomes'] {
  const body = res.body as
    | {
        error?: string;
        results?: { index: number; ok: boolean; link?: KnownLink; error?: string | null }[];
        stoppedEarly?: { reason: string } | null;
      }
    | undefined;
  if (single) {
    const [link] = createdLinks(res.body);
    return [link ? { ok: true, link } : { ok: false, code: body?.error ?? `http_${res.status}` }];
  }
  return Array.from({ length: count }, (_, index) => {
    const entry = body?.results?.find((result) => result.index === index);
    if (entry?.ok && entry.link) return { ok: true as const, link: entry.link };
    // An entry after the one the limit stopped is not in `results`: not attempted, for that reason.
    const code =
      entry?.error ??
      (body?.stoppedEarly && `not_attempted:${body.stoppedEarly.reason}`) ??
      body?.error ??
      `http_${res.status}`;
    return { ok: false as const, code };
  });
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
