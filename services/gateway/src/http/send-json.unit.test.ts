import type { Response } from 'express';
import { ApiError } from './errors';
import { holdJsonAnswer, sendError, sendJson, sendJsonAnswer } from './send-json';

/** A response that records what is written to it. */
function recordingResponse() {
  const written = { status: 0, headers: {} as Record<string, unknown>, body: '', ended: false };
  const res = {
    status(code: number) {
      written.status = code;
      return res;
    },
    setHeader(name: string, value: unknown) {
      written.headers[name.toLowerCase()] = value;
      return res;
    },
    end(body: string) {
      written.body = body;
      written.ended = true;
      return res;
    },
  };
  return { res: res as unknown as Response, written };
}

describe('sendJson', () => {
  it('writes the JSON text with its length, the status and the headers', () => {
    const { res, written } = recordingResponse();
    sendJson(res, { name: 'é' }, { status: 201, headers: { 'RateLimit-Limit': '300' } });
    expect(written).toEqual({
      status: 201,
      headers: {
        'ratelimit-limit': '300',
        'content-type': 'application/json; charset=utf-8',
        'content-length': 13,
      },
      body: '{"name":"é"}',
      ended: true,
    });
  });

  it('answers 200 unless told', () => {
    const { res, written } = recordingResponse();
    sendJson(res, []);
    expect(written.status).toBe(200);
  });
});

describe('sendError', () => {
  it("writes the error contract's body, its own headers over the given ones", () => {
    const { res, written } = recordingResponse();
    const error = new ApiError('rate_limited', 'Slow down.', { headers: { 'Retry-After': '9' } });
    sendError(res, error, { 'Retry-After': '1', 'RateLimit-Remaining': '0' });
    expect(written.status).toBe(429);
    expect(written.headers).toMatchObject({ 'retry-after': '9', 'ratelimit-remaining': '0' });
    expect(JSON.parse(written.body)).toEqual({ error: 'rate_limited', message: 'Slow down.' });
  });
});

describe('holdJsonAnswer', () => {
  it('hands the answer over instead of sending it; sendJsonAnswer then sends it as it was', async () => {
    const { res, written } = recordingResponse();
    const answer = await holdJsonAnswer(res, () => {
      sendJson(res, { ok: true }, { status: 207, headers: { A: '1' } });
      return Promise.resolve();
    });
    expect(answer).toEqual({ status: 207, headers: { A: '1' }, body: '{"ok":true}' });
    expect(written.ended).toBe(false);

    sendJsonAnswer(res, answer);
    expect(written).toMatchObject({ status: 207, body: '{"ok":true}', ended: true });
  });

  it('passes a throw through, and holds nothing after it', async () => {
    const { res, written } = recordingResponse();
    await expect(holdJsonAnswer(res, () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    sendJson(res, { after: true });
    expect(written.ended).toBe(true);
  });

  it('refuses a handler that answered nothing', async () => {
    const { res } = recordingResponse();
    await expect(holdJsonAnswer(res, () => Promise.resolve())).rejects.toThrow(
      'the handler finished without a JSON answer',
    );
  });
});
