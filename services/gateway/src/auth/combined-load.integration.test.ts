import { newId } from '@linkservice/db';
import { generateSecretKey, hashSecretKey } from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, revokeKey } from '@linkservice/testing';
import { insertLink } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { StatementCounter, startGatewayWithTenants } from '../testing';

/**
 * GET /links/{id} authenticates with a combined load (one statement for the key check and the
 * read); every other route keeps the separate key lookup. Both must decide identically, and the
 * combined route must really cost one statement.
 */

const statements = new StatementCounter();

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  ({ gateway, alpha, beta } = await startGatewayWithTenants({ deps: statements.countingDeps }));
});
afterAll(async () => {
  await gateway.stop();
});

const UNAUTHORISED = { error: 'unauthorised', message: 'A valid secret API key is required.' };
const NOT_FOUND = { error: 'not_found', message: 'No such link.' };

/** The answer to one request and how many statements the gateway ran for it. */
async function counted(path: string, key: string, method = 'GET') {
  statements.count = 0;
  const res = await gateway.api(path, { key, method });
  return { status: res.status, body: res.body as unknown, statements: statements.count, res };
}

describe('GET /links/{id}', () => {
  it('authenticates and reads in one statement', async () => {
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    const found = await counted(`/api/v1/links/${link.id}`, alpha.live.secret);
    expect(found).toMatchObject({ status: 200, statements: 1 });
    expect(found.body).toMatchObject({ link: { id: link.id, environment: 'live' } });

    expect(await counted(`/api/v1/links/${newId('lnk')}`, alpha.live.secret)).toMatchObject({
      status: 404,
      body: NOT_FOUND,
      statements: 1,
    });
    // An id no link can have still needs the key checked, in the same one statement.
    for (const id of ['x'.repeat(129), 'with%00nul', 'a.b']) {
      expect(await counted(`/api/v1/links/${id}`, alpha.live.secret)).toMatchObject({
        status: 404,
        body: NOT_FOUND,
        statements: 1,
      });
    }
    expect(await counted(`/api/v1/links/${link.id}`, alpha.live.secret, 'HEAD')).toMatchObject({
      status: 200,
      statements: 1,
    });
  });

  it('leaves other routes on the one key lookup', async () => {
    expect(await counted('/api/v1/app', alpha.live.secret)).toMatchObject({
      status: 200,
      statements: 1,
    });
    expect(await counted('/api/v1/no-such-thing', alpha.live.secret)).toMatchObject({
      status: 404,
      statements: 1,
    });
    expect(await counted(`/api/v1/links/${newId('lnk')}`, alpha.live.secret, 'PUT')).toMatchObject({
      status: 405,
      statements: 1,
    });
  });

  it('never reaches the database with a malformed key', async () => {
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    const malformed = alpha.live.secret.slice(0, 20);
    expect(await counted(`/api/v1/links/${link.id}`, malformed)).toMatchObject({
      status: 401,
      body: UNAUTHORISED,
      statements: 0,
    });
  });

  it('answers the identical 401 for an unknown key, with or without the link', async () => {
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    for (const id of [link.id, newId('lnk')]) {
      const { res, ...answer } = await counted(`/api/v1/links/${id}`, generateSecretKey('live'));
      expect(answer).toEqual({ status: 401, body: UNAUTHORISED, statements: 1 });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('refuses a revoked key on the very next request', async () => {
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    const key = await createKey(gateway.deps.db, alpha.appId, 'live');
    expect((await counted(`/api/v1/links/${link.id}`, key.secret)).status).toBe(200);
    await revokeKey(gateway.deps.db, key.id);
    expect(await counted(`/api/v1/links/${link.id}`, key.secret)).toMatchObject({
      status: 401,
      body: UNAUTHORISED,
    });
  });

  it('refuses a key whose record names another environment than its text', async () => {
    // A test-looking secret stored as a live key, asking for a live link of its own app: the
    // join finds the link, and the mismatch must still be refused.
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    const secret = generateSecretKey('test');
    await gateway.deps.db
      .insertInto('api_keys')
      .values({
        id: newId('key'),
        app_id: alpha.appId,
        environment: 'live',
        key_hash: hashSecretKey(secret),
      })
      .execute();
    expect(await counted(`/api/v1/links/${link.id}`, secret)).toMatchObject({
      status: 401,
      body: UNAUTHORISED,
    });
  });

  it("answers another app's or environment's link exactly like a missing one", async () => {
    const theirs = await insertLink(gateway.deps.db, { appId: beta.appId, environment: 'live' });
    const testLink = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'test' });
    const missing = await counted(`/api/v1/links/${newId('lnk')}`, alpha.live.secret);
    for (const id of [theirs.id, testLink.id]) {
      const answer = await counted(`/api/v1/links/${id}`, alpha.live.secret);
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: missing.status,
        body: missing.body,
      });
    }
    expect((await counted(`/api/v1/links/${testLink.id}`, alpha.test.secret)).status).toBe(200);
  });
});
