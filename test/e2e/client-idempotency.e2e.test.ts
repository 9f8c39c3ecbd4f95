import { randomBytes } from 'node:crypto';
import type { FetchLike } from '@linkservice/client';
import { createClient, isLinkServiceError } from '@linkservice/client';
import { createStackApp, testFetch } from '../support/app-journey';
import type { Stack } from '../support/stack';
import { startRunStack } from '../support/stack';

jest.setTimeout(60_000);

let stack: Stack;

beforeAll(async () => {
  stack = await startRunStack();
});

afterAll(async () => {
  await stack.stop();
});

it('a create retried under its Idempotency-Key is replayed, never made twice', async () => {
  const app = await createStackApp(stack, 'Idem');
  const keys: (string | undefined)[] = [];
  let dropFirstAnswer = true;
  // The first answer is lost on the way back (the link was made): the client must retry.
  const fetch: FetchLike = async (url, init) => {
    keys.push(init.headers['idempotency-key']);
    const answer = await testFetch(url, init);
    if (dropFirstAnswer && init.method === 'POST') {
      dropFirstAnswer = false;
      throw new TypeError('fetch failed');
    }
    return answer;
  };
  const client = createClient({
    baseUrl: stack.apiUrl,
    apiKey: app.secret,
    fetch,
    retry: { baseDelayMs: 10 },
  });
  const created = await client.createLink({ webFallbackUrl: 'https://acme.example' });
  expect(created).toMatchObject({ replayed: true, attempts: 2 });
  expect(keys).toHaveLength(2);
  expect(keys[0]).toBe(keys[1]);
  const all = await client.listLinks();
  expect(all.pagination.total).toBe(1);
  expect(all.links[0].id).toBe(created.link.id);

  // 10 parallel identical creates under one key: one link, the same answer for all.
  const key = `order-${randomBytes(4).toString('hex')}`;
  const answers = await Promise.all(
    Array.from({ length: 10 }, () =>
      client.createLink(
        { alias: key, webFallbackUrl: 'https://acme.example' },
        { idempotencyKey: key },
      ),
    ),
  );
  expect(new Set(answers.map((a) => a.link.id)).size).toBe(1);
  expect(answers.filter((a) => !a.replayed)).toHaveLength(1);

  // Same key, another body: a typed invalid_request naming the header.
  const reused = await client
    .createLink({ webFallbackUrl: 'https://other.example' }, { idempotencyKey: key })
    .catch((e: unknown) => e);
  expect(isLinkServiceError(reused, 'invalid_request') && reused.fields).toHaveProperty(
    'Idempotency-Key',
  );

  // Batches in chunks under one run key: running it again replays every chunk.
  const entries = Array.from({ length: 130 }, () => ({ webFallbackUrl: 'https://acme.example' }));
  const first = await client.createLinksInBatches(entries, { idempotencyKey: `import-${key}` });
  const again = await client.createLinksInBatches(entries, { idempotencyKey: `import-${key}` });
  expect(first.created).toBe(130);
  expect(again.chunks.map((c) => c.replayed)).toEqual([true, true]);
  expect(again.results).toEqual(first.results);
  expect((await client.listLinks()).pagination.total).toBe(2 + 130);
});

it('an import whose chunk answer was lost reports it unknown, and its run key finishes it once', async () => {
  const app = await createStackApp(stack, 'IdemRun');
  let posts = 0;
  // The second chunk's answer is lost on the way back, after the gateway created its links.
  const fetch: FetchLike = async (url, init) => {
    const answer = await testFetch(url, init);
    if (init.method === 'POST' && ++posts === 2) throw new TypeError('fetch failed');
    return answer;
  };
  const client = createClient({ baseUrl: stack.apiUrl, apiKey: app.secret, fetch });
  const entries = Array.from({ length: 130 }, () => ({ webFallbackUrl: 'https://acme.example' }));

  // No caller key and no retry: the client makes the run key and returns it.
  const first = await client.createLinksInBatches(entries, { maxRetries: 0 });
  expect(first.idempotencyKey).toEqual(expect.any(String));
  expect(first).toMatchObject({ created: 100, failed: 0, notAttempted: 0, unknown: 30 });
  expect(first.interrupted).toMatchObject({
    atIndex: 100,
    size: 30,
    outcomeUnknown: true,
    idempotencyKey: `${first.idempotencyKey!}:1`,
    error: { slug: 'network' },
  });
  // "Unknown" was the truth: the chunk's links exist.
  expect((await client.listLinks()).pagination.total).toBe(130);

  // Run again under the returned key: both chunks replayed, nothing created twice.
  const again = await client.createLinksInBatches(entries, {
    idempotencyKey: first.idempotencyKey,
  });
  expect(again.chunks.map((c) => c.replayed)).toEqual([true, true]);
  expect(again).toMatchObject({ created: 130, notAttempted: 0, unknown: 0 });
  expect((await client.listLinks()).pagination.total).toBe(130);
});
