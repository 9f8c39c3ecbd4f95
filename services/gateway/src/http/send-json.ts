import type { Response } from 'express';

/**
 * What `res.json(body)` sends here (same body, Content-Type and Content-Length; ETags are off
 * app-wide), without express's per-call work: settings lookups, parsing and re-formatting the
 * Content-Type for its charset, and the freshness check. For the link routes (read, list, PATCH,
 * archive). HEAD gets the headers only: node drops the body of a HEAD response.
 */
export function sendJson(res: Response, body: unknown): void {
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
