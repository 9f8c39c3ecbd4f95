import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import type { Environment, LinkRow } from '@linkservice/db';
import { generateReceiptSigningKey } from '@linkservice/keys';
import {
  CLICK_TOKEN_TOMBSTONE,
  FORGET_CLICK_TOKENS,
  clickTokenKey,
  clickTokenValue,
  hashClickToken,
  parseClickTokenValue,
} from '@linkservice/link-cache';
import type { ApiResponse, LinkSeed, Tenant } from '@linkservice/testing';
import { eventually, insertLink } from '@linkservice/testing';
import { sql } from 'kysely';
import type { GatewayClients } from '../deps';
import type { TestGateway } from '../testing';
import { StatementCounter, startGateway, startGatewayWithTenants } from '../testing';

/**
 * POST /api/v1/sdk/installs and DELETE /api/v1/sdk/installs/{id} (app-interface.md), and the
 * receipts' JWKS, against Postgres and Redis. Click tokens are put into Redis as the link host
 * mints them (the redirect's own tests cover minting; the e2e tests the whole tap).
 */

const DOMAIN = 'go.example.test';
const INSTALLS = '/api/v1/sdk/installs';
const TTL_SECONDS = 600;
const NO_SUCH_INSTALL = { error: 'not_found', message: 'No such install.' };

const statements = new StatementCounter();

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  ({ gateway, alpha, beta } = await startGatewayWithTenants({
    env: { LINK_DOMAIN: DOMAIN, CLICK_TOKEN_TTL_SECONDS: String(TTL_SECONDS) },
    deps: statements.countingDeps,
  }));
});

afterAll(async () => {
  await gateway.stop();
});

/**
 * A gateway whose Redis client runs `forget` instead of the script that removes used-up tokens'
 * records (ClickTokenStore.forget) and everything else as usual: to keep those records (so
 * racing reports reach Postgres's one-time claim) or to fail.
 */
function gatewayWithForget(forget: () => Promise<unknown>): Promise<TestGateway> {
  const swap = (clients: GatewayClients): GatewayClients => ({
    ...clients,
    redis: new Proxy(clients.redis, {
      get(target, property) {
        if (property === 'eval') {
          return (script: string, numKeys: number, ...keysAndArgs: string[]) =>
            script === FORGET_CLICK_TOKENS
              ? forget()
              : target.eval(script, numKeys, ...keysAndArgs);
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    }),
  });
  return startGateway({
    env: { LINK_DOMAIN: DOMAIN, CLICK_TOKEN_TTL_SECONDS: String(TTL_SECONDS) },
    deps: (clients) => statements.countingDeps(swap(clients)),
  });
}

const keepRecords = () => Promise.resolve(0);

function seed(tenant: Tenant, environment: Environment = 'live', values: LinkSeed = {}) {
  return insertLink(gateway.deps.db, { appId: tenant.appId, environment }, values);
}

function urlOf(tenant: Tenant, environment: Environment, alias: string): string {
  const label = environment === 'live' ? tenant.subdomainKey : `${tenant.subdomainKey}-test`;
  return `https://${label}.${DOMAIN}/${alias}`;
}

/** A click token as the link host mints it for `link`, clicked `agoMs` ago. */
async function mintToken(
  link: LinkRow,
  agoMs = 1_000,
): Promise<{ token: string; clickedAt: number }> {
  const token = randomBytes(16).toString('base64url').replace(/[-_]/g, 'x').slice(0, 22);
  const clickedAt = Date.now() - agoMs;
  const key = clickTokenKey(gateway.deps.config.REDIS_PREFIX, hashClickToken(token));
  await gateway.deps.redis.set(key, clickTokenValue({ linkId: link.id, clickedAt }), 'PX', 60_000);
  return { token, clickedAt };
}

/** What the token's key holds: its record, a used-up token's tombstone, or nothing. */
function tokenKeyValue(token: string): Promise<string | null> {
  return gateway.deps.redis.get(
    clickTokenKey(gateway.deps.config.REDIS_PREFIX, hashClickToken(token)),
  );
}

/** 1 while the token's record is held (a match can still find it), 0 once used up or gone. */
async function tokenRecordExists(token: string): Promise<number> {
  const value = await tokenKeyValue(token);
  return value !== null && parseClickTokenValue(value) !== null ? 1 : 0;
}

function report(body: unknown, key = alpha.publishable.live.secret): Promise<ApiResponse> {
  return gateway.api(INSTALLS, { key, body });
}

function erase(
  installId: string,
  secret: string | undefined,
  key = alpha.publishable.live.secret,
): Promise<ApiResponse> {
  return gateway.api(`${INSTALLS}/${installId}`, {
    method: 'DELETE',
    key,
    headers: secret === undefined ? {} : { 'x-install-secret': secret },
  });
}

interface Reported {
  install: { id: string; secret: string };
  match: { type: string; method: string | null; clickedAt: string | null };
  link: { id: string; alias: string; url: string; environment: string } | null;
  deepLinkData: unknown;
}

function reported(res: ApiResponse): Reported {
  expect(res.status).toBe(201);
  return res.body as unknown as Reported;
}

const NO_MATCH = {
  match: { type: 'none', method: null, clickedAt: null },
  link: null,
  deepLinkData: null,
};

async function installRow(id: string) {
  return gateway.deps.db.selectFrom('installs').selectAll().where('id', '=', id).executeTakeFirst();
}

async function clickRow(id: string) {
  return gateway.deps.db
    .selectFrom('install_clicks')
    .selectAll()
    .where('install_id', '=', id)
    .executeTakeFirst();
}

describe('POST /sdk/installs: the Play install referrer', () => {
  it('matches the token once, answers the link and its data, and stores no secret or device data', async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { screen: 'promo', id: 7 } });
    const { token, clickedAt } = await mintToken(link);
    const res = await report({
      platform: 'android',
      playReferrer: `utm_source=mail&ls_click=${token}`,
    });
    const body = reported(res);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(JSON.parse(res.text) as object)).toEqual([
      'install',
      'match',
      'link',
      'deepLinkData',
    ]);
    expect(body.install.id).toMatch(/^ins_[0-9A-Z]{26}$/);
    expect(body.install.secret).toMatch(/^[0-9A-Za-z]{32,}$/);
    expect(body).toEqual({
      install: body.install,
      match: {
        type: 'deterministic',
        method: 'play_referrer',
        clickedAt: new Date(clickedAt).toISOString(),
      },
      link: {
        id: link.id,
        alias: link.alias,
        url: urlOf(alpha, 'live', link.alias),
        environment: 'live',
      },
      deepLinkData: { screen: 'promo', id: 7 },
    });

    const row = await installRow(body.install.id);
    expect(row).toMatchObject({
      app_id: alpha.appId,
      environment: 'live',
      platform: 'android',
      match_method: 'play_referrer',
      link_id: link.id,
    });
    expect(row!.secret_hash).toEqual(createHash('sha256').update(body.install.secret).digest());
    expect(Object.keys(row!).sort()).toEqual([
      'app_id',
      'created_at',
      'environment',
      'id',
      'link_id',
      'match_method',
      'platform',
      'secret_hash',
    ]);
    expect(await clickRow(body.install.id)).toEqual({
      install_id: body.install.id,
      token_hash: hashClickToken(token),
      link_id: link.id,
      clicked_at: new Date(clickedAt),
    });
    // Used up: its Redis record is a tombstone now (a click counted late under the token then
    // counts nothing), and a second report does not match.
    expect(await tokenRecordExists(token)).toBe(0);
    expect(await tokenKeyValue(token)).toBe(CLICK_TOKEN_TOMBSTONE);
    const again = reported(
      await report({ platform: 'android', playReferrer: `ls_click=${token}` }),
    );
    expect(again).toMatchObject(NO_MATCH);
    expect(again.install.id).not.toBe(body.install.id);
  });

  it('reads the referrer still percent-encoded, and the last ls_click of several', async () => {
    const link = await seed(alpha);
    const first = await mintToken(link);
    const second = await mintToken(link);
    const encoded = reported(
      await report({
        platform: 'android',
        playReferrer: `utm_source%3Dx%26ls_click%3D${first.token}`,
      }),
    );
    expect(encoded.match.method).toBe('play_referrer');
    const last = reported(
      await report({
        platform: 'android',
        playReferrer: `ls_click=nope&ls_click=${second.token}`,
      }),
    );
    expect(last.match).toMatchObject({ method: 'play_referrer' });
    expect(await tokenRecordExists(second.token)).toBe(0);
  });

  it("never matches another environment's or app's token, and does not use it up", async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { ok: true } });
    const { token } = await mintToken(link);
    const evidence = { platform: 'android', playReferrer: `ls_click=${token}` };
    for (const key of [alpha.publishable.test.secret, beta.publishable.live.secret]) {
      expect(reported(await report(evidence, key))).toMatchObject(NO_MATCH);
    }
    expect(await tokenRecordExists(token)).toBe(1);
    const right = reported(await report(evidence));
    expect(right).toMatchObject({ match: { method: 'play_referrer' }, deepLinkData: { ok: true } });
  });

  it('refuses a token past CLICK_TOKEN_TTL_SECONDS even while Redis still holds it', async () => {
    const link = await seed(alpha);
    const { token } = await mintToken(link, (TTL_SECONDS + 5) * 1000);
    expect(
      reported(await report({ platform: 'android', playReferrer: `ls_click=${token}` })),
    ).toMatchObject(NO_MATCH);
  });

  it('costs two statements: the key lookup, and one that matches and records', async () => {
    const link = await seed(alpha);
    const { token } = await mintToken(link);
    statements.count = 0;
    const body = reported(
      await report({
        platform: 'android',
        playReferrer: `ls_click=${token}`,
        clipboardUrl: `${urlOf(alpha, 'live', link.alias)}?ls_click=${token}`,
        openedUrl: urlOf(alpha, 'live', link.alias),
      }),
    );
    expect(body.match.method).toBe('play_referrer');
    expect(statements.count).toBe(2);
  });

  it('refuses the token of a link that has expired since, without using it up', async () => {
    const link = await seed(alpha, 'live', { expires_at: new Date(Date.now() - 1_000) });
    const { token } = await mintToken(link);
    const evidence = { platform: 'android', playReferrer: `ls_click=${token}` };
    expect(reported(await report(evidence))).toMatchObject(NO_MATCH);
    expect(await tokenRecordExists(token)).toBe(1);
    await gateway.deps.db
      .updateTable('links')
      .set({ archived_at: new Date() })
      .where('id', '=', link.id)
      .execute();
    // Archived wins over expired, as in resolve.
    expect(reported(await report(evidence)).match.method).toBe('play_referrer');
  });

  it('lets Postgres decide a race: every loser waits for the winner, then tries its next evidence', async () => {
    // The token's Redis record stays, so every report finds it and reaches the one-time claim.
    const racing = await gatewayWithForget(keepRecords);
    try {
      const [link, opened] = await Promise.all([seed(alpha), seed(alpha)]);
      const { token } = await mintToken(link);
      const racingReports = () =>
        Promise.all(
          Array.from({ length: 12 }, () =>
            racing.api(INSTALLS, {
              key: alpha.publishable.live.secret,
              body: {
                platform: 'android',
                playReferrer: `ls_click=${token}`,
                openedUrl: urlOf(alpha, 'live', opened.alias),
              },
            }),
          ),
        );
      statements.count = 0;
      // An uncommitted claim of the token, so every report's claim waits on it as on a winner
      // still committing; rolled back once they wait, so one of them wins after all.
      const answers = await gateway.deps.db.connection().execute(async (blocker) => {
        await sql`BEGIN`.execute(blocker);
        const holder = `ins_${'Z'.repeat(26)}`;
        await sql`INSERT INTO installs (id, app_id, environment, platform, secret_hash)
          VALUES (${holder}, ${alpha.appId}, 'live', 'ios', ${Buffer.alloc(32)})`.execute(blocker);
        await sql`INSERT INTO install_clicks (install_id, token_hash, link_id, clicked_at)
          VALUES (${holder}, ${hashClickToken(token)}, ${link.id}, now())`.execute(blocker);
        const pending = racingReports();
        await eventually(
          async () => {
            const { rows } = await sql<{ waiting: number }>`
            SELECT count(*)::int AS waiting FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(
              gateway.deps.db,
            );
            // The gateway's pool holds 10 connections: 10 reports wait at once, 2 for a connection.
            return rows[0]?.waiting === 10;
          },
          { what: 'ten reports waiting on the uncommitted claim' },
        );
        await sql`ROLLBACK`.execute(blocker);
        return pending;
      });
      const methods = answers.map((res) => reported(res).match.method);
      expect(methods.filter((method) => method === 'play_referrer')).toHaveLength(1);
      expect(methods.filter((method) => method === 'opened_url')).toHaveLength(11);
      // 12 key lookups and 12 recorded attempts, plus one lost attempt (run again) for each
      // report whose claim waited for the winner's and then found the token taken.
      expect(statements.count).toBeGreaterThan(24);
      expect(await tokenRecordExists(token)).toBe(1);
    } finally {
      await racing.stop();
    }
  });

  it('matches exactly once when many reports race with one token', async () => {
    const link = await seed(alpha);
    const { token } = await mintToken(link);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        report({ platform: 'android', playReferrer: `ls_click=${token}` }),
      ),
    );
    const types = answers.map((res) => reported(res).match.type);
    expect(types.filter((type) => type === 'deterministic')).toHaveLength(1);
    expect(types.filter((type) => type === 'none')).toHaveLength(11);
    const claims = await gateway.deps.db
      .selectFrom('install_clicks')
      .select('install_id')
      .where('token_hash', '=', hashClickToken(token))
      .execute();
    expect(claims).toHaveLength(1);
  });
});

describe('POST /sdk/installs: the clipboard and the opened link', () => {
  it('matches a copied link URL carrying ls_click, on the key’s own host only', async () => {
    const link = await seed(alpha, 'test', { deep_link_data: { from: 'clipboard' } });
    const { token, clickedAt } = await mintToken(link);
    const elsewhere = reported(
      await report(
        { platform: 'ios', clipboardUrl: `${urlOf(beta, 'test', link.alias)}?ls_click=${token}` },
        alpha.publishable.test.secret,
      ),
    );
    expect(elsewhere).toMatchObject(NO_MATCH);
    const copied = reported(
      await report(
        {
          platform: 'ios',
          clipboardUrl: ` ${urlOf(alpha, 'test', link.alias)}?ls_click=${token} `,
        },
        alpha.publishable.test.secret,
      ),
    );
    expect(copied).toMatchObject({
      match: {
        type: 'deterministic',
        method: 'clipboard',
        clickedAt: new Date(clickedAt).toISOString(),
      },
      link: { id: link.id, environment: 'test', url: urlOf(alpha, 'test', link.alias) },
      deepLinkData: { from: 'clipboard' },
    });
  });

  it('matches the opened link by itself, clickedAt null, with no token used', async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { opened: 1 } });
    const body = reported(
      await report({ platform: 'ios', openedUrl: `${urlOf(alpha, 'live', link.alias)}?utm=x#top` }),
    );
    expect(body).toMatchObject({
      match: { type: 'deterministic', method: 'opened_url', clickedAt: null },
      link: { id: link.id },
      deepLinkData: { opened: 1 },
    });
    expect(await clickRow(body.install.id)).toBeUndefined();
  });

  it("matches a QR code's URL (the scan marker qr=1) to its link, with the token it carries", async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { scanned: 1 } });
    expect(
      reported(
        await report({ platform: 'ios', openedUrl: `${urlOf(alpha, 'live', link.alias)}?qr=1` }),
      ),
    ).toMatchObject({
      match: { type: 'deterministic', method: 'opened_url', clickedAt: null },
      link: { id: link.id },
      deepLinkData: { scanned: 1 },
    });
    const { token, clickedAt } = await mintToken(link);
    const url = `${urlOf(alpha, 'live', link.alias)}?qr=1&ls_click=${token}&qr=1`;
    expect(reported(await report({ platform: 'ios', openedUrl: url }))).toMatchObject({
      match: { method: 'opened_url', clickedAt: new Date(clickedAt).toISOString() },
      link: { id: link.id },
    });
  });

  it('uses up the token an opened link carries, which must be valid and of that link', async () => {
    const link = await seed(alpha);
    const other = await seed(alpha);
    const { token, clickedAt } = await mintToken(link);
    const url = `${urlOf(alpha, 'live', link.alias)}?ls_click=${token}`;
    // Another link's URL with this token: the token is not its own.
    expect(
      reported(
        await report({
          platform: 'ios',
          openedUrl: `${urlOf(alpha, 'live', other.alias)}?ls_click=${token}`,
        }),
      ),
    ).toMatchObject(NO_MATCH);
    expect(reported(await report({ platform: 'ios', openedUrl: url }))).toMatchObject({
      match: { method: 'opened_url', clickedAt: new Date(clickedAt).toISOString() },
    });
    // Used up now: the same URL no longer matches, not even by itself.
    expect(reported(await report({ platform: 'ios', openedUrl: url }))).toMatchObject(NO_MATCH);
    expect(
      reported(
        await report({
          platform: 'ios',
          openedUrl: `${urlOf(alpha, 'live', link.alias)}?ls_click=%%%`,
        }),
      ),
    ).toMatchObject(NO_MATCH);
  });

  it('resolves the opened link as resolve does: archived yes, expired and foreign no', async () => {
    const archived = await seed(alpha, 'live', { archived_at: new Date() });
    const expired = await seed(alpha, 'live', { expires_at: new Date(Date.now() - 60_000) });
    const betas = await seed(beta);
    expect(
      reported(await report({ platform: 'ios', openedUrl: urlOf(alpha, 'live', archived.alias) }))
        .match.method,
    ).toBe('opened_url');
    for (const url of [
      urlOf(alpha, 'live', expired.alias),
      urlOf(beta, 'live', betas.alias),
      urlOf(alpha, 'test', archived.alias),
      'not a url',
      'https://example.com/x',
    ]) {
      expect(reported(await report({ platform: 'ios', openedUrl: url }))).toMatchObject(NO_MATCH);
    }
  });

  it('tries the referrer, then the clipboard, then the opened link, and uses up only the one that matched', async () => {
    const [a, b, c] = await Promise.all([seed(alpha), seed(alpha), seed(alpha)]);
    const [ta, tb] = await Promise.all([mintToken(a), mintToken(b)]);
    const evidence = {
      platform: 'android',
      playReferrer: `ls_click=${ta.token}`,
      clipboardUrl: `${urlOf(alpha, 'live', b.alias)}?ls_click=${tb.token}`,
      openedUrl: urlOf(alpha, 'live', c.alias),
    };
    const first = reported(await report(evidence));
    expect(first).toMatchObject({ match: { method: 'play_referrer' }, link: { id: a.id } });
    expect(await tokenRecordExists(tb.token)).toBe(1);
    // The referrer's token is used up: the next in order matches.
    const second = reported(await report(evidence));
    expect(second).toMatchObject({ match: { method: 'clipboard' }, link: { id: b.id } });
    const third = reported(await report(evidence));
    expect(third).toMatchObject({ match: { method: 'opened_url' }, link: { id: c.id } });
  });

  it('keeps deepLinkData members called __proto__', async () => {
    const link = await seed(alpha, 'live', {
      deep_link_data: JSON.parse('{"__proto__":{"admin":true},"a":1}') as Record<string, unknown>,
    });
    const res = await report({ platform: 'ios', openedUrl: urlOf(alpha, 'live', link.alias) });
    // jsonb orders members by length: `a` first.
    expect(res.text).toContain('"deepLinkData":{"a":1,"__proto__":{"admin":true}}');
  });
});

describe('POST /sdk/installs: what is refused', () => {
  it.each([
    [{}, { platform: 'is required' }],
    [{ platform: 'windows' }, { platform: 'must be "ios" or "android"' }],
    [{ platform: 1 }, { platform: 'must be "ios" or "android"' }],
    [{ platform: 'ios', playReferrer: 5 }, { playReferrer: 'must be a string' }],
    [{ platform: 'ios', clipboardUrl: null }, { clipboardUrl: 'must be a string' }],
    [
      { platform: 'ios', openedUrl: 'x'.repeat(4097) },
      { openedUrl: 'must be at most 4096 characters' },
    ],
    [{ platform: 'ios', ip: '1.2.3.4' }, { ip: 'is not a field of this request' }],
    [
      JSON.parse('{"platform":"ios","__proto__":{"a":1}}') as object,
      JSON.parse('{"__proto__":"is not a field of this request"}') as object,
    ],
  ])('422 naming the fields of body %#', async (body, fields) => {
    const res = await report(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'Some fields are invalid.',
      fields,
    });
  });

  it('records evidence that names nothing as an install without a match', async () => {
    const body = reported(
      await report({
        platform: 'android',
        playReferrer: 'utm_source=google-play&utm_medium=organic',
        clipboardUrl: 'a shopping list',
        openedUrl: '',
      }),
    );
    expect(body).toMatchObject(NO_MATCH);
    expect(await installRow(body.install.id)).toMatchObject({ match_method: null, link_id: null });
  });

  it('is 401 for a secret key or none, whatever the body', async () => {
    for (const key of [alpha.live.secret, undefined]) {
      const res = await gateway.api(INSTALLS, { key, body: { nonsense: true } });
      expect(res.status).toBe(401);
    }
  });
});

describe('DELETE /sdk/installs/{installId}', () => {
  async function matchedInstall(tenant = alpha): Promise<{ body: Reported; token: string }> {
    const link = await seed(tenant);
    const { token } = await mintToken(link);
    const res = await report(
      { platform: 'android', playReferrer: `ls_click=${token}` },
      tenant.publishable.live.secret,
    );
    return { body: reported(res), token };
  }

  function jwk() {
    return gateway.api('/.well-known/jwks.json');
  }

  it('erases the install and its click in one go and answers a receipt the JWKS verifies', async () => {
    const { body } = await matchedInstall();
    const res = await erase(body.install.id, body.install.secret);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const answer = res.body as { erased: Record<string, unknown>; receipt: string };
    expect(Object.keys(answer)).toEqual(['erased', 'receipt']);
    expect(answer.erased).toEqual({
      installId: body.install.id,
      erasedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      records: 2,
    });

    const [header, payload, signature] = answer.receipt.split('.');
    const keys = (await jwk()).body as { keys: { kid: string }[] };
    expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({
      alg: 'EdDSA',
      kid: keys.keys[0].kid,
    });
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({
      installId: body.install.id,
      appId: alpha.appId,
      environment: 'live',
      erasedAt: answer.erased.erasedAt,
      records: 2,
    });
    const publicKey = createPublicKey({ key: keys.keys[0], format: 'jwk' });
    expect(
      verify(
        null,
        Buffer.from(`${header}.${payload}`),
        publicKey,
        Buffer.from(signature, 'base64url'),
      ),
    ).toBe(true);

    expect(await installRow(body.install.id)).toBeUndefined();
    expect(await clickRow(body.install.id)).toBeUndefined();
    // Nothing is held any more.
    const again = await erase(body.install.id, body.install.secret);
    expect(again.status).toBe(404);
    expect(again.body).toEqual(NO_SUCH_INSTALL);
  });

  it('removes a used token’s Redis record left behind before erasing its install, and erases nothing when Redis fails', async () => {
    const keeping = await gatewayWithForget(keepRecords);
    const failing = await gatewayWithForget(() =>
      Promise.reject(new Error('Connection is closed.')),
    );
    try {
      const link = await seed(alpha);
      const { token } = await mintToken(link);
      const res = await keeping.api(INSTALLS, {
        key: alpha.publishable.live.secret,
        body: { platform: 'android', playReferrer: `ls_click=${token}` },
      });
      const { install } = reported(res);
      expect(await tokenRecordExists(token)).toBe(1);

      const refused = await failing.api(`${INSTALLS}/${install.id}`, {
        method: 'DELETE',
        key: alpha.publishable.live.secret,
        headers: { 'x-install-secret': install.secret },
      });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: 'unavailable' });
      expect(await installRow(install.id)).toBeDefined();

      expect((await erase(install.id, install.secret)).status).toBe(200);
      expect(await tokenRecordExists(token)).toBe(0);
      // A tombstone until the record would have expired: the link host, counting a click late
      // under that token, finds the key and neither counts it nor brings the record back.
      expect(await tokenKeyValue(token)).toBe(CLICK_TOKEN_TOMBSTONE);
      const ttl = await gateway.deps.redis.pttl(
        clickTokenKey(gateway.deps.config.REDIS_PREFIX, hashClickToken(token)),
      );
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      // Erased, and its token cannot match a second install.
      expect(
        reported(await report({ platform: 'android', playReferrer: `ls_click=${token}` })),
      ).toMatchObject(NO_MATCH);
    } finally {
      await Promise.all([keeping.stop(), failing.stop()]);
    }
  });

  it('counts one record for an install that used no token', async () => {
    const body = reported(await report({ platform: 'ios' }));
    const res = await erase(body.install.id, body.install.secret);
    expect((res.body as { erased: { records: number } }).erased.records).toBe(1);
  });

  it('answers one identical 404 for a wrong, missing or foreign secret, id, app or environment', async () => {
    const { body } = await matchedInstall();
    const { id, secret } = body.install;
    const attempts: [string, string | undefined, string][] = [
      [id, undefined, alpha.publishable.live.secret],
      [id, '', alpha.publishable.live.secret],
      [id, secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a'), alpha.publishable.live.secret],
      [id, 'short', alpha.publishable.live.secret],
      [id, secret, alpha.publishable.test.secret],
      [id, secret, beta.publishable.live.secret],
      [`ins_${'0'.repeat(26)}`, secret, alpha.publishable.live.secret],
      ['nope', secret, alpha.publishable.live.secret],
      [encodeURIComponent(`${id}/..`), secret, alpha.publishable.live.secret],
    ];
    for (const [installId, tried, key] of attempts) {
      const res = await erase(installId, tried, key);
      expect({ installId, status: res.status, text: res.text }).toEqual({
        installId,
        status: 404,
        text: JSON.stringify(NO_SUCH_INSTALL),
      });
    }
    // None of them erased anything.
    expect(await installRow(id)).toBeDefined();
    expect((await erase(id, secret)).status).toBe(200);
  });

  it('is 401 with a secret key, and keeps the install id out of the request log', async () => {
    const { body } = await matchedInstall();
    expect((await erase(body.install.id, body.install.secret, alpha.live.secret)).status).toBe(401);
    const logged = await startGateway({ env: { LINK_DOMAIN: DOMAIN }, logLevel: 'info' });
    try {
      const res = await logged.api(`${INSTALLS}/${body.install.id}`, {
        method: 'DELETE',
        key: alpha.publishable.live.secret,
        headers: { 'x-install-secret': body.install.secret },
      });
      expect(res.status).toBe(200);
      const lines = logged.logs.join('\n');
      expect(lines).toContain('/api/v1/sdk/installs/:installId');
      expect(lines).not.toContain(body.install.id);
      expect(lines).not.toContain(body.install.secret);
    } finally {
      await logged.stop();
    }
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('serves the one public key, without auth, cacheable and readable from any origin', async () => {
    const res = await gateway.api('/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const { keys } = res.body as { keys: Record<string, string>[] };
    expect(keys).toHaveLength(1);
    expect(keys[0]).toEqual({
      kty: 'OKP',
      crv: 'Ed25519',
      x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kid: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      alg: 'EdDSA',
      use: 'sig',
    });
    expect(res.text).not.toMatch(/"d"/);
  });

  it('serves the public keys of signing keys rotated out after the current one', async () => {
    const previous = createPublicKey(generateReceiptSigningKey());
    const rotated = await startGateway({
      env: {
        LINK_DOMAIN: DOMAIN,
        RECEIPT_PREVIOUS_PUBLIC_KEYS: previous.export({ type: 'spki', format: 'pem' }).toString(),
      },
    });
    try {
      const { keys } = (await rotated.api('/.well-known/jwks.json')).body as {
        keys: { x: string }[];
      };
      expect(keys.map((key) => key.x)).toEqual([
        rotated.deps.receipts.jwk.x,
        previous.export({ format: 'jwk' }).x,
      ]);
    } finally {
      await rotated.stop();
    }
    expect((await gateway.api('/.well-known/jwks.json', { method: 'POST', body: {} })).status).toBe(
      405,
    );
  });
});
