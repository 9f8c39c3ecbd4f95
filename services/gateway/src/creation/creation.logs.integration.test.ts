import { linkOf } from '@linkservice/testing';
import { useCreationStack } from './creation.testing';

const kit = useCreationStack({ logLevel: 'info' });

interface RequestLine {
  level: string;
  reqId?: string;
  jobId?: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
}

function requestLines(requestId: string): RequestLine[] {
  return kit.stack.gateway.logs
    .map((line) => JSON.parse(line) as RequestLine)
    .filter((line) => line.reqId === requestId && line.req !== undefined);
}

describe('the request log line of a creation', () => {
  it('names the creation job of a single link and of a batch', async () => {
    const tenant = await kit.newTenant();
    const single = await kit.stack.gateway.api('/api/v1/links', {
      key: tenant.live.secret,
      method: 'POST',
      body: { webFallbackUrl: 'https://example.com/a' },
      headers: { 'x-request-id': 'log-create-1' },
    });
    expect(single.status).toBe(201);
    linkOf(single);
    const batch = await kit.stack.gateway.api('/api/v1/links/batch', {
      key: tenant.live.secret,
      method: 'POST',
      body: {
        links: [
          { webFallbackUrl: 'https://example.com/b' },
          { webFallbackUrl: 'https://example.com/c' },
        ],
      },
      headers: { 'x-request-id': 'log-create-2' },
    });
    expect(batch.status).toBe(201);

    for (const requestId of ['log-create-1', 'log-create-2']) {
      const lines = requestLines(requestId);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 'info', jobId: expect.stringMatching(/^crt_/) });
    }
    expect(requestLines('log-create-1')[0]?.jobId).not.toBe(requestLines('log-create-2')[0]?.jobId);
  });

  it('names no job when none was submitted', async () => {
    const tenant = await kit.newTenant();
    await kit.stack.gateway.api('/api/v1/links', {
      key: tenant.live.secret,
      method: 'POST',
      body: { alias: '' },
      headers: { 'x-request-id': 'log-create-invalid' },
    });
    const lines = requestLines('log-create-invalid');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ res: { statusCode: 422 } });
    expect(lines[0]).not.toHaveProperty('jobId');
  });
});
