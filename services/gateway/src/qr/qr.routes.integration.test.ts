import { randomBytes } from 'node:crypto';
import { Resvg } from '@resvg/resvg-js';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import type { Environment } from '@linkservice/db';
import type { ApiResponse, LinkSeed, Tenant } from '@linkservice/testing';
import { createTenant, insertLink } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import { QR_CACHE_CONTROL } from './qr.routes';

const DOMAIN = 'go.example.test';
const NOT_FOUND = { error: 'not_found', message: 'No such link.' };
const LEVELS = ['L', 'M', 'Q', 'H'] as const;
const FORMATS = ['svg', 'png'] as const;

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: DOMAIN } });
  [alpha, beta] = await Promise.all([
    createTenant(gateway.deps.db, { name: 'Alpha' }),
    createTenant(gateway.deps.db, { name: 'Beta' }),
  ]);
});
afterAll(async () => {
  await gateway.stop();
});

function seed(tenant: Tenant, environment: Environment = 'live', values: LinkSeed = {}) {
  return insertLink(gateway.deps.db, { appId: tenant.appId, environment }, values);
}

function getQr(
  on: TestGateway,
  id: string,
  query = '',
  key = alpha.live.secret,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  return on.api(`/api/v1/links/${id}/qr${query}`, { key, headers });
}

/** The link's own URL, as GET /links/{id} shows it. */
async function urlOf(on: TestGateway, id: string, key: string): Promise<string> {
  const res = await on.api(`/api/v1/links/${id}`, { key });
  expect(res.status).toBe(200);
  return (res.body as { link: { url: string } }).link.url;
}

/** What a reader reads off a PNG: jsQR over its pixels. */
function decodePng(png: Buffer): { text: string | undefined; width: number; height: number } {
  const image = PNG.sync.read(png);
  const code = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  return { text: code?.data, width: image.width, height: image.height };
}

/** Width and height from a PNG's header (IHDR), without decoding its pixels. */
function pngDimensionsOf(png: Buffer): { width: number; height: number } {
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** An SVG as a screen shows it (resvg at its own size), then read like a photo of it. */
function decodeSvg(svg: string): string | undefined {
  return decodePng(new Resvg(svg).render().asPng()).text;
}

function decoded(res: ApiResponse): string | undefined {
  return res.headers.get('content-type') === 'image/png'
    ? decodePng(res.bytes).text
    : decodeSvg(res.text);
}

describe('GET /links/{linkId}/qr', () => {
  it.each(FORMATS.flatMap((format) => LEVELS.map((level) => [format, level] as const)))(
    'encodes the link URL with the scan marker (%s, level %s)',
    async (format, level) => {
      const link = await seed(alpha);
      const url = await urlOf(gateway, link.id, alpha.live.secret);
      const res = await getQr(gateway, link.id, `?format=${format}&level=${level}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(
        format === 'svg' ? 'image/svg+xml' : 'image/png',
      );
      expect(decoded(res)).toBe(`${url}?qr=1`);
    },
  );

  it('answers an svg of 512 pixels by default, with its cache headers', async () => {
    const link = await seed(alpha, 'test');
    const res = await getQr(gateway, link.id, '', alpha.test.secret);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    expect(res.text).toMatch(/^<svg [^>]*width="512" height="512"/);
    expect(res.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
    expect(QR_CACHE_CONTROL).toBe('private, max-age=31536000, immutable');
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    expect(decoded(res)).toBe(`https://${alpha.subdomainKey}-test.${DOMAIN}/${link.alias}?qr=1`);
  });

  it('draws the png exactly size pixels wide and high, and the svg with that width', async () => {
    const link = await seed(alpha);
    // 97, 333 and 777 over this code's modules are pairs where qrcode's own width arithmetic
    // would come out a pixel short.
    for (const size of [64, 97, 333, 512, 777, 2048]) {
      // The largest png takes its time on a busy machine.
      const png = await gateway.api(
        `/api/v1/links/${link.id}/qr?format=png&size=${size}&margin=0`,
        {
          key: alpha.live.secret,
          timeoutMs: 60_000,
        },
      );
      expect(png.status).toBe(200);
      expect(pngDimensionsOf(png.bytes)).toEqual({ width: size, height: size });
      const svg = await getQr(gateway, link.id, `?size=${size}`);
      expect(svg.text).toMatch(new RegExp(`^<svg [^>]*width="${size}" height="${size}"`));
    }
    // The header agrees with the pixels.
    const png = await getQr(gateway, link.id, '?format=png&size=97&margin=0');
    expect(decodePng(png.bytes)).toMatchObject({ width: 97, height: 97 });
  }, 120_000);

  it('keeps the margin: a quiet zone of light pixels, none at 0', async () => {
    const link = await seed(alpha);
    const cornerOf = async (margin: number) => {
      const res = await getQr(gateway, link.id, `?format=png&size=256&margin=${margin}`);
      return [...PNG.sync.read(res.bytes).data.subarray(0, 3)];
    };
    expect(await cornerOf(4)).toEqual([255, 255, 255]);
    // The finder pattern's dark corner.
    expect(await cornerOf(0)).toEqual([0, 0, 0]);
  });

  it('draws in the colours asked for (#rgb as #rrggbb), and the code still reads', async () => {
    const link = await seed(alpha);
    const url = await urlOf(gateway, link.id, alpha.live.secret);
    const svg = await getQr(gateway, link.id, `?color=%231A237E&background=%23ffd`);
    expect(svg.status).toBe(200);
    expect(svg.text).toContain('fill="#ffffdd"');
    expect(svg.text).toContain('stroke="#1a237e"');
    expect(decoded(svg)).toBe(`${url}?qr=1`);
    const png = await getQr(gateway, link.id, `?format=png&color=%23123&background=%23fffde7`);
    const image = PNG.sync.read(png.bytes);
    expect([...image.data.subarray(0, 3)]).toEqual([0xff, 0xfd, 0xe7]);
    expect(decoded(png)).toBe(`${url}?qr=1`);
  });

  it('gives an archived link its code: it keeps resolving', async () => {
    const link = await seed(alpha, 'live', { archived_at: new Date() });
    const res = await getQr(gateway, link.id, '?format=png');
    expect(res.status).toBe(200);
    expect(decoded(res)).toBe(`https://${alpha.subdomainKey}.${DOMAIN}/${link.alias}?qr=1`);
  });

  it('answers an expired link 410 `expired`, without cache headers', async () => {
    const link = await seed(alpha, 'live', { expires_at: '2020-01-01T00:00:00Z' });
    for (const query of ['', '?format=png']) {
      const res = await getQr(gateway, link.id, query);
      expect(res.status).toBe(410);
      expect(res.body).toEqual({ error: 'expired', message: 'The link has expired.' });
      expect(res.headers.get('etag')).toBeNull();
      expect(res.headers.get('cache-control')).toBeNull();
    }
  });

  it("answers another app's or environment's link, and unknown or malformed ids, as GET /links/{id} does", async () => {
    const [betas, alphaTest] = await Promise.all([seed(beta), seed(alpha, 'test')]);
    const ids = [betas.id, alphaTest.id, 'lnk_nope', 'a.b', '%ZZ', 'x'.repeat(200)];
    for (const id of ids) {
      const qr = await getQr(gateway, id);
      const link = await gateway.api(`/api/v1/links/${id}`, { key: alpha.live.secret });
      expect({ id, status: qr.status, body: qr.body }).toEqual({
        id,
        status: 404,
        body: NOT_FOUND,
      });
      expect({ id, status: link.status, body: link.body }).toEqual({
        id,
        status: 404,
        body: NOT_FOUND,
      });
      expect(qr.headers.get('etag')).toBeNull();
    }
    // The link is there for its own key.
    expect((await getQr(gateway, betas.id, '', beta.live.secret)).status).toBe(200);
  });

  it('refuses a publishable key as every secret-key route does', async () => {
    const link = await seed(alpha);
    const res = await getQr(gateway, link.id, '', alpha.publishable.live.secret);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorised',
      message: 'A valid secret API key is required.',
    });
  });

  describe('ETag', () => {
    it('is the same for the same image, and differs with any parameter', async () => {
      const link = await seed(alpha);
      const etagOf = async (query: string) =>
        (await getQr(gateway, link.id, query)).headers.get('etag');
      const plain = await etagOf('');
      expect(await etagOf('?format=svg&size=512&margin=4&level=M')).toBe(plain);
      // A change to the link does not change its URL, so not its code.
      await gateway.api(`/api/v1/links/${link.id}`, {
        key: alpha.live.secret,
        method: 'PATCH',
        body: { title: 'Changed' },
      });
      expect(await etagOf('')).toBe(plain);
      const others = await Promise.all(
        [
          '?format=png',
          '?size=513',
          '?margin=3',
          '?level=H',
          '?color=%23000001',
          '?background=%23fffffe',
        ].map(etagOf),
      );
      expect(new Set([plain, ...others]).size).toBe(7);
      const otherLink = await seed(alpha);
      expect((await getQr(gateway, otherLink.id)).headers.get('etag')).not.toBe(plain);
    });

    it('answers If-None-Match with the current ETag 304, without a body', async () => {
      const link = await seed(alpha);
      const first = await getQr(gateway, link.id, '?format=png');
      const etag = first.headers.get('etag')!;
      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await getQr(gateway, link.id, '?format=png', alpha.live.secret, {
          'if-none-match': ifNoneMatch,
        });
        expect({ ifNoneMatch, status: res.status }).toEqual({ ifNoneMatch, status: 304 });
        expect(res.bytes).toHaveLength(0);
        expect(res.headers.get('etag')).toBe(etag);
        expect(res.headers.get('cache-control')).toBe(QR_CACHE_CONTROL);
      }
      const stale = await getQr(gateway, link.id, '?format=png', alpha.live.secret, {
        'if-none-match': '"other"',
      });
      expect(stale.status).toBe(200);
      expect(stale.bytes.equals(first.bytes)).toBe(true);
      // Another format's image is another image.
      const svg = await getQr(gateway, link.id, '', alpha.live.secret, { 'if-none-match': etag });
      expect(svg.status).toBe(200);
    });
  });

  describe('422', () => {
    it.each([
      ['?foo=1', { foo: 'unknown parameter' }],
      ['?size=100&size=200', { size: 'must be given once, as one value' }],
      ['?format=gif', { format: 'must be one of svg, png' }],
      ['?format=SVG', { format: 'must be one of svg, png' }],
      ['?size=63', { size: 'must be an integer from 64 to 2048 (pixels)' }],
      ['?size=2049', { size: 'must be an integer from 64 to 2048 (pixels)' }],
      ['?size=1.5e2', { size: 'must be an integer from 64 to 2048 (pixels)' }],
      ['?size=', { size: 'must be an integer from 64 to 2048 (pixels)' }],
      ['?margin=-1', { margin: 'must be an integer from 0 to 16 (modules)' }],
      ['?margin=17', { margin: 'must be an integer from 0 to 16 (modules)' }],
      ['?level=m', { level: 'must be one of L, M, Q, H' }],
      ['?level=X', { level: 'must be one of L, M, Q, H' }],
      ['?color=red', { color: 'must be a hex colour, #rrggbb or #rgb' }],
      ['?color=%2312345', { color: 'must be a hex colour, #rrggbb or #rgb' }],
      ['?background=%23ggg', { background: 'must be a hex colour, #rrggbb or #rgb' }],
      [
        '?color=%23aaaaaa',
        {
          color:
            'color and background contrast 2.32:1; at least 3:1 is needed for the code to scan reliably',
        },
      ],
      [
        '?color=%23777777&background=%23333333',
        {
          color:
            'color must be darker than background: many QR readers cannot read light modules on a dark ground',
        },
      ],
      [
        '?color=%23ffffff&background=%23000000',
        {
          color:
            'color must be darker than background: many QR readers cannot read light modules on a dark ground',
        },
      ],
      [
        '?background=%23000',
        {
          background:
            'color must be darker than background: many QR readers cannot read light modules on a dark ground',
        },
      ],
      [
        '?background=%23555555',
        {
          background:
            'color and background contrast 2.81:1; at least 3:1 is needed for the code to scan reliably',
        },
      ],
      [
        '?format=jpg&size=1&margin=x&level=&qr=1&color=%23fff&background=%23fff',
        {
          format: 'must be one of svg, png',
          size: 'must be an integer from 64 to 2048 (pixels)',
          margin: 'must be an integer from 0 to 16 (modules)',
          level: 'must be one of L, M, Q, H',
          qr: 'unknown parameter',
          color:
            'color must be darker than background: many QR readers cannot read light modules on a dark ground',
        },
      ],
    ])('%s', async (query, fields) => {
      const link = await seed(alpha);
      const res = await getQr(gateway, link.id, query);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        error: 'invalid_request',
        message: 'Some fields are invalid.',
        fields,
      });
      expect(res.headers.get('etag')).toBeNull();
    });
  });
});

describe('the longest link URL the contract allows', () => {
  // 180 characters: a host name of 68 + 1 + 180 stays within DNS's 253.
  const LONG_DOMAIN = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(50)}.example`;
  let long: TestGateway;
  let tenant: Tenant;

  beforeAll(async () => {
    long = await startGateway({ env: { LINK_DOMAIN: LONG_DOMAIN } });
    // The longest subdomain key (63), in the test environment (`-test` makes the host longest).
    const subdomainKey = `q${randomBytes(31).toString('hex')}`;
    expect(subdomainKey).toHaveLength(63);
    tenant = await createTenant(long.deps.db, { subdomainKey });
  });
  afterAll(async () => {
    await long.stop();
  });

  it.each(FORMATS.flatMap((format) => LEVELS.map((level) => [format, level] as const)))(
    'still decodes to the exact URL (%s, level %s)',
    async (format, level) => {
      // The longest alias: 128 characters.
      const alias = `Z${randomBytes(48).toString('base64url')}`.padEnd(128, '_');
      const link = await insertLink(
        long.deps.db,
        { appId: tenant.appId, environment: 'test' },
        { alias },
      );
      const url = await urlOf(long, link.id, tenant.test.secret);
      expect(url).toBe(`https://${tenant.subdomainKey}-test.${LONG_DOMAIN}/${alias}`);
      expect(url.length).toBe(8 + 68 + 1 + 180 + 1 + 128);
      const res = await getQr(
        long,
        link.id,
        `?format=${format}&level=${level}`,
        tenant.test.secret,
      );
      expect(res.status).toBe(200);
      expect(decoded(res)).toBe(`${url}?qr=1`);
    },
  );

  it('refuses a size that would not give each module a pixel, naming the least', async () => {
    const link = await insertLink(
      long.deps.db,
      { appId: tenant.appId, environment: 'test' },
      { alias: 'L'.repeat(128) },
    );
    const res = await getQr(long, link.id, '?size=64&level=H&margin=16', tenant.test.secret);
    expect(res.status).toBe(422);
    const message = (res.body as { fields: { size: string } }).fields.size;
    const least = Number(/at least (\d+) pixels/.exec(message)?.[1]);
    expect(least).toBeGreaterThan(64);
    const fits = await getQr(
      long,
      link.id,
      `?size=${least}&level=H&margin=16&format=png`,
      tenant.test.secret,
    );
    expect(fits.status).toBe(200);
    expect(decodePng(fits.bytes)).toMatchObject({ width: least, height: least });
    const short = await getQr(
      long,
      link.id,
      `?size=${least - 1}&level=H&margin=16`,
      tenant.test.secret,
    );
    expect(short.status).toBe(422);
  });
});
