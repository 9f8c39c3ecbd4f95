import { randomBytes } from 'node:crypto';
import type { ApiResponse } from '@linkservice/testing';
import { eventually, linkOf } from '@linkservice/testing';
import type { StackApp } from './app-journey';
import { IPHONE, callApi, followLink } from './app-journey';
import type { Stack } from './stack';

/**
 * A customer's whole journey with one link, through the running stack's API and link host only:
 * create, read, list, follow (counted clicks), change, archive. Shared by the e2e tier (single
 * Redis) and the cluster tier (Redis Cluster), so both run the same steps.
 */

const CLICKS_VISIBLE_WITHIN_MS = 5_000;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export async function linkLifecycleJourney(stack: Stack, app: StackApp): Promise<void> {
  const { subdomainKey } = app;
  const api = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    callApi(stack, app, method, path, body);
  const follow = (alias: string, options: { method?: string; userAgent?: string } = {}) =>
    followLink(stack, app, alias, options);
  const clickCountReaches = async (id: string, expected: number): Promise<number> => {
    let seen = -1;
    try {
      return await eventually(
        async () => {
          seen = linkOf(await api('GET', `/links/${id}`)).clickCount;
          return seen >= expected && seen;
        },
        { timeoutMs: CLICKS_VISIBLE_WITHIN_MS, intervalMs: 100 },
      );
    } catch {
      throw new Error(
        `clickCount was ${seen}, not ${expected}, ${CLICKS_VISIBLE_WITHIN_MS} ms after the clicks\n${stack.output()}`,
      );
    }
  };

  const own = await api('GET', '/app');
  expect(own.status).toBe(200);
  expect(own.body).toMatchObject({ app: { subdomainKey }, environment: 'live' });

  // Create.
  const alias = `spring-${randomBytes(3).toString('hex')}`;
  const createdRes = await api('POST', '/links', {
    alias,
    webFallbackUrl: 'https://journey.example/spring',
    iosFallbackUrl: 'https://apps.apple.com/app/id1',
    deepLinkData: { screen: 'promo', id: 7 },
    tags: ['promo', 'spring', 'promo'],
  });
  expect(createdRes.status).toBe(201);
  expect(createdRes.headers.get('ratelimit-remaining')).not.toBeNull();
  expect(createdRes.headers.get('x-request-id')).toBeTruthy();
  const created = linkOf(createdRes);
  expect(created).toMatchObject({
    alias,
    url: `https://${subdomainKey}.${stack.linkDomain}/${alias}`,
    environment: 'live',
    tags: ['promo', 'spring'],
    deepLinkData: { screen: 'promo', id: 7 },
    archivedAt: null,
    clickCount: 0,
    status: 'active',
  });
  expect(created.id).toMatch(/^lnk_/);
  expect(created.createdAt).toMatch(TIMESTAMP);
  expect(created.updatedAt).toBe(created.createdAt);

  // Read and list.
  const read = await api('GET', `/links/${created.id}`);
  expect(read.status).toBe(200);
  expect(linkOf(read)).toEqual(created);
  const listed = await api('GET', `/links?search=${alias}&tag=spring`);
  expect(listed.status).toBe(200);
  expect(listed.body).toEqual({
    links: [created],
    pagination: { page: 1, perPage: 25, total: 1, pageCount: 1 },
  });

  // Follow: web fallback, iOS fallback for an iPhone; HEAD answers alike but is not a click.
  const head = await follow(alias, { method: 'HEAD' });
  expect(head.status).toBe(302);
  const web = await follow(alias);
  expect(web.status).toBe(302);
  expect(web.headers.get('location')).toBe('https://journey.example/spring');
  expect(web.headers.get('cache-control')).toBe('no-store');
  const ios = await follow(alias, { userAgent: IPHONE });
  expect(ios.status).toBe(302);
  expect(ios.headers.get('location')).toBe('https://apps.apple.com/app/id1');
  // All three were counted (or not) before they were answered, so a count past 2 would show
  // no later than the 2 does.
  expect(await clickCountReaches(created.id, 2)).toBe(2);

  // Change: the very next redirect goes to the new fallback.
  const patched = await api('PATCH', `/links/${created.id}`, {
    webFallbackUrl: 'https://journey.example/summer',
    iosFallbackUrl: null,
  });
  expect(patched.status).toBe(200);
  expect(linkOf(patched)).toMatchObject({
    webFallbackUrl: 'https://journey.example/summer',
    iosFallbackUrl: null,
    clickCount: 2,
  });
  expect(linkOf(patched).updatedAt > created.updatedAt).toBe(true);
  const afterPatch = await follow(alias, { userAgent: IPHONE });
  expect(afterPatch.status).toBe(302);
  expect(afterPatch.headers.get('location')).toBe('https://journey.example/summer');

  // Archive: the link keeps redirecting (and counting); the alias stays taken.
  const archived = await api('DELETE', `/links/${created.id}`);
  expect(archived.status).toBe(200);
  expect(linkOf(archived)).toMatchObject({ id: created.id, status: 'archived' });
  expect(linkOf(archived).archivedAt).toMatch(TIMESTAMP);
  expect(archived.body?.note).toEqual(expect.any(String));
  const afterArchive = await follow(alias);
  expect(afterArchive.status).toBe(302);
  expect(afterArchive.headers.get('location')).toBe('https://journey.example/summer');
  expect(await clickCountReaches(created.id, 4)).toBe(4);

  expect((await api('DELETE', `/links/${created.id}`)).status).toBe(409);
  const again = await api('POST', '/links', { alias, webFallbackUrl: 'https://journey.example' });
  expect(again.status).toBe(422);
  expect(again.body).toMatchObject({
    error: 'invalid_request',
    fields: { alias: expect.any(String) },
  });
  const archivedList = await api('GET', `/links?status=archived&search=${alias}`);
  expect(archivedList.body?.links?.map((l) => l.id)).toEqual([created.id]);
}
