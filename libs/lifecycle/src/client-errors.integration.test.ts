import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { createLogger } from '@linkservice/logger';
import { answerClientErrors, clientErrorAnswer } from './client-errors';
import { startHttpService } from './http-server';
import { createProbeServer } from './probe-server';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** One response as read off the wire: status line, headers, JSON body. */
function parseResponse(text: string): RawAnswer {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: body ? (JSON.parse(body) as unknown) : undefined,
  };
}

/**
 * Sends bytes on a raw socket (node's client would refuse to send most of these) and reads what
 * comes back until the server closes the connection.
 */
async function sendRawText(port: number, ...parts: string[]): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // The server may close while the client is still sending (a huge header): a reset after the
  // answer is expected, the answer is what counts.
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  for (const part of parts) socket.write(part);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}

async function sendRaw(port: number, ...parts: string[]): Promise<RawAnswer> {
  return parseResponse(await sendRawText(port, ...parts));
}

function expectContractAnswer(answer: RawAnswer, status: number, error: string): void {
  expect({ status: answer.status, body: answer.body }).toEqual({
    status,
    body: { error, message: expect.any(String) },
  });
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['x-request-id']).toMatch(UUID);
  expect(Number(answer.headers['content-length'])).toBe(JSON.stringify(answer.body).length);
}

const OVERSIZED_HEADER = `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`;
const MALFORMED_REQUEST_LINE = 'NOT A REQUEST LINE\r\n\r\n';

async function listening(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function closed(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}

describe('startHttpService answers what node refuses with the error contract', () => {
  let service: Awaited<ReturnType<typeof startHttpService>>;
  let port: number;

  beforeAll(async () => {
    service = await startHttpService((_req, res) => res.end('ok'), {
      name: 'client-errors-test',
      port: 0,
      logger: createLogger('client-errors-test', 'silent'),
    });
    port = (service.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await service.stop(1_000);
  });

  it('431 payload_too_large for headers over the limit', async () => {
    expectContractAnswer(await sendRaw(port, OVERSIZED_HEADER), 431, 'payload_too_large');
  });

  it('400 invalid_body for a malformed request line', async () => {
    expectContractAnswer(await sendRaw(port, MALFORMED_REQUEST_LINE), 400, 'invalid_body');
  });

  it('400 invalid_body for a malformed header, after a good request on the same connection', async () => {
    const text = await sendRawText(
      port,
      'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n',
    );
    expect(text.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    const second = text.indexOf('HTTP/1.1 400 ');
    expect(second).toBeGreaterThan(0);
    expectContractAnswer(parseResponse(text.slice(second)), 400, 'invalid_body');
  });

  it('gives each refused request an id of its own', async () => {
    const [a, b] = await Promise.all([
      sendRaw(port, MALFORMED_REQUEST_LINE),
      sendRaw(port, MALFORMED_REQUEST_LINE),
    ]);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('keeps serving well-formed requests', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(await res.text()).toBe('ok');
  });
});

describe('answerClientErrors on a server with short timeouts', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = createServer(
      { headersTimeout: 200, requestTimeout: 400, connectionsCheckingInterval: 50 },
      (req, res) => {
        req.resume();
        req.on('end', () => res.end('ok'));
      },
    );
    answerClientErrors(server);
    port = await listening(server);
  });
  afterAll(async () => {
    await closed(server);
  });

  it('408 invalid_body for headers never completed', async () => {
    const started = Date.now();
    const answer = await sendRaw(port, 'GET / HTTP/1.1\r\nHost: x\r\n');
    expectContractAnswer(answer, 408, 'invalid_body');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('408 invalid_body for a body never completed', async () => {
    const answer = await sendRaw(
      port,
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
    );
    expectContractAnswer(answer, 408, 'invalid_body');
  });
});

describe('a refused request behind a response still being written', () => {
  it('closes the connection without writing into that response', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial');
    });
    answerClientErrors(server);
    const port = await listening(server);
    try {
      const socket = connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      await once(socket, 'data');
      socket.write(MALFORMED_REQUEST_LINE);
      await once(socket, 'close');
      const text = Buffer.concat(chunks).toString('utf8');
      expect(text.endsWith('partial')).toBe(true);
      expect(text).not.toContain('HTTP/1.1 400');
    } finally {
      await closed(server);
    }
  });
});

describe('the probe server', () => {
  it('answers a malformed request with the error contract too', async () => {
    const server = createProbeServer({
      probes: {},
      isShuttingDown: () => false,
      logger: createLogger('client-errors-test', 'silent'),
    });
    const port = await listening(server);
    try {
      expectContractAnswer(await sendRaw(port, MALFORMED_REQUEST_LINE), 400, 'invalid_body');
    } finally {
      await closed(server);
    }
  });
});

describe('clientErrorAnswer', () => {
  it.each([
    ['HPE_HEADER_OVERFLOW', 431, 'payload_too_large'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413, 'payload_too_large'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'invalid_body'],
    ['HPE_INVALID_METHOD', 400, 'invalid_body'],
    [undefined, 400, 'invalid_body'],
  ])('%s is %i %s', (code, status, error) => {
    const answer = clientErrorAnswer(code);
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status, error });
  });
});
