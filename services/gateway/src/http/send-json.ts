import type { Response } from 'express';
import type { ApiError } from './errors';

/** A JSON answer as it goes on the wire: what an Idempotency-Key stores and replays. */
export interface JsonAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  /** The JSON text, sent byte for byte. */
  body: string;
}

export interface JsonAnswerOptions {
  /** 200 unless said. */
  status?: number;
  headers?: Readonly<Record<string, string>>;
}

/** Answers held back by holdJsonAnswer(), per response: handed over instead of sent. */
const holders = new WeakMap<Response, (answer: JsonAnswer) => void>();

/**
 * THE JSON answer writer of the gateway: routes, errors and replays all answer through it. What
 * `res.json(body)` sends here (same body, Content-Type and Content-Length; ETags are off
 * app-wide), without express's per-call work: settings lookups, parsing and re-formatting the
 * Content-Type for its charset, and the freshness check. HEAD gets the headers only: node drops
 * the body of a HEAD response.
 */
export function sendJson(res: Response, body: unknown, options: JsonAnswerOptions = {}): void {
  sendJsonAnswer(res, {
    status: options.status ?? 200,
    headers: options.headers ?? {},
    body: JSON.stringify(body),
  });
}

/** The error contract's answer for `error`, its headers over `headers` (e.g. RateLimit-*). */
export function sendError(
  res: Response,
  error: ApiError,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJson(res, error.toBody(), {
    status: error.status,
    headers: { ...headers, ...error.headers },
  });
}

/** sendJson() for an answer already written out (a replay). */
export function sendJsonAnswer(res: Response, answer: JsonAnswer): void {
  const hold = holders.get(res);
  if (hold) {
    holders.delete(res);
    hold(answer);
    return;
  }
  res.status(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.end(answer.body);
}

/**
 * Runs `answer` with its JSON answer held back and handed over instead of sent: for a wrapper
 * that must do something with the answer first (an Idempotency-Key stores it before it is sent).
 * What `answer` throws passes through, and the response is as it was: nothing was sent.
 */
export async function holdJsonAnswer(
  res: Response,
  answer: () => Promise<void>,
): Promise<JsonAnswer> {
  let held: JsonAnswer | undefined;
  holders.set(res, (sent) => {
    held = sent;
  });
  try {
    await answer();
  } finally {
    holders.delete(res);
  }
  if (held === undefined) throw new Error('the handler finished without a JSON answer');
  return held;
}
