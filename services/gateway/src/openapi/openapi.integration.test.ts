import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import { apiDocument } from './api-document';
import { documentText } from './document';

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});

afterAll(async () => {
  await gateway.stop();
});

describe('GET /api/v1/openapi.json', () => {
  it('serves the document without a key, as committed', async () => {
    const res = await gateway.api('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.text).toBe(documentText(apiDocument()));
  });

  it('is outside the keyed API: a wrong key changes nothing', async () => {
    const res = await gateway.api('/api/v1/openapi.json', { key: 'ls_sk_live_wrong' });
    expect(res.status).toBe(200);
  });

  it('answers another method with 405 and Allow, without a key, like every API path', async () => {
    const res = await gateway.api('/api/v1/openapi.json', { method: 'POST', body: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.body?.error).toBe('method_not_allowed');
  });
});
