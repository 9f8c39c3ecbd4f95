import type { Tenant } from '@linkservice/testing';
import { createTenant, insertLink } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

/** CORS on /api/v1/sdk (apps built on web views, web SDKs); none on the secret-key API. */

const DOMAIN = 'go.example.test';
const ORIGIN = 'https://shop.example.com';

let gateway: TestGateway;
let tenant: Tenant;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: DOMAIN } });
  tenant = await createTenant(gateway.deps.db);
});

afterAll(async () => {
  await gateway.stop();
});

function preflight(path: string, requestHeaders = 'authorization, content-type') {
  return gateway.api(path, {
    method: 'OPTIONS',
    headers: {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': requestHeaders,
    },
  });
}

describe('a preflight to /api/v1/sdk', () => {
  it('is answered without a key: any origin, POST and DELETE, the SDK headers', async () => {
    const res = await preflight('/api/v1/sdk/resolve', 'authorization, content-type, x-request-id');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('POST,DELETE');
    expect(res.headers.get('access-control-allow-headers')).toBe(
      'Authorization,Content-Type,X-Install-Secret,X-Request-Id',
    );
    expect(res.headers.get('access-control-max-age')).toBe('600');
    // Never with credentials: a publishable key travels as a header, not as a cookie.
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('www-authenticate')).toBeNull();
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });
});

describe('an SDK answer to a browser', () => {
  it('lets the page read the body, X-Request-Id and Retry-After', async () => {
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId, environment: 'live' });
    const res = await gateway.api('/api/v1/sdk/resolve', {
      key: tenant.publishable.live.secret,
      headers: { origin: ORIGIN },
      body: { url: `https://${tenant.subdomainKey}.${DOMAIN}/${link.alias}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toBe('X-Request-Id,Retry-After');
  });

  it('carries CORS on errors too, so the page can read a 401', async () => {
    const res = await gateway.api('/api/v1/sdk/resolve', {
      headers: { origin: ORIGIN },
      body: { url: 'x' },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});

describe('the secret-key API', () => {
  it('gets no CORS: secret keys belong on servers, never in browsers', async () => {
    const res = await gateway.api('/api/v1/app', {
      key: tenant.live.secret,
      headers: { origin: ORIGIN },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const options = await preflight('/api/v1/app');
    expect(options.status).toBe(401);
    expect(options.headers.get('access-control-allow-origin')).toBeNull();
  });
});
