import type { DbHandle } from '@linkservice/db';
import { generateSecretKey, hashSecretKey } from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, createTenant, revokeKey, testDatabase } from '@linkservice/testing';
import { StatementCounter } from '../testing';
import { KeysRepository } from './keys.repository';

/**
 * The key lookups asked for in one event-loop turn share one statement; each still gets the
 * answer for its own hash, and nothing is remembered between turns.
 */

const statements = new StatementCounter();

let handle: DbHandle;
let keys: KeysRepository;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  handle = testDatabase();
  keys = new KeysRepository(statements.countingDeps({ db: handle.db }).db);
  [alpha, beta] = await Promise.all([createTenant(handle.db), createTenant(handle.db)]);
});
afterAll(async () => {
  await handle.close();
});

describe('KeysRepository.findActiveByHash', () => {
  it('answers every lookup of a turn from one statement, each with its own key', async () => {
    const revoked = await createKey(handle.db, alpha.appId, 'live');
    await revokeKey(handle.db, revoked.id);
    const asked = [
      alpha.live,
      beta.test,
      alpha.publishable.test,
      revoked,
      { secret: generateSecretKey('live') },
      alpha.live,
    ];
    statements.count = 0;
    const found = await Promise.all(
      asked.map(({ secret }) => keys.findActiveByHash(hashSecretKey(secret))),
    );
    expect(statements.count).toBe(1);
    expect(
      found.map((auth) => auth && [auth.keyId, auth.appId, auth.environment, auth.type]),
    ).toEqual([
      [alpha.live.id, alpha.appId, 'live', 'secret'],
      [beta.test.id, beta.appId, 'test', 'secret'],
      [alpha.publishable.test.id, alpha.appId, 'test', 'publishable'],
      undefined,
      undefined,
      [alpha.live.id, alpha.appId, 'live', 'secret'],
    ]);
    expect(found[1]?.app).toEqual({
      id: beta.appId,
      name: beta.name,
      subdomainKey: beta.subdomainKey,
    });
  });

  it('looks each turn up afresh: a key revoked after a lookup is refused on the next one', async () => {
    const key = await createKey(handle.db, beta.appId, 'test');
    const hash = hashSecretKey(key.secret);
    expect((await keys.findActiveByHash(hash))?.keyId).toBe(key.id);
    await revokeKey(handle.db, key.id);
    statements.count = 0;
    expect(await keys.findActiveByHash(hash)).toBeUndefined();
    expect(statements.count).toBe(1);
  });

  it('splits a turn with more keys than one statement takes, answering all of them', async () => {
    const hashes = Array.from({ length: 250 }, () => hashSecretKey(generateSecretKey('live')));
    hashes[123] = hashSecretKey(alpha.live.secret);
    statements.count = 0;
    const found = await Promise.all(hashes.map((hash) => keys.findActiveByHash(hash)));
    expect(statements.count).toBe(3);
    expect(found.filter((auth) => auth !== undefined).map((auth) => auth?.keyId)).toEqual([
      alpha.live.id,
    ]);
    expect(found[123]?.keyId).toBe(alpha.live.id);
  });
});
