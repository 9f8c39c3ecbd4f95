import type { ServerResponse } from 'node:http';

function page(title: string, message: string): Buffer {
  return Buffer.from(
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
      '<meta name="viewport" content="width=device-width, initial-scale=1">' +
      `<title>${title}</title></head>` +
      '<body style="font-family:system-ui,sans-serif;text-align:center;padding:3em 1em">' +
      `<h1>${title}</h1><p>${message}</p></body></html>\n`,
  );
}

export const PAGES = {
  notFound: page('Link not found', 'This link does not exist. Check the address and try again.'),
  expired: page('Link expired', 'This link has expired and no longer leads anywhere.'),
  methodNotAllowed: page('Method not allowed', 'Links can only be opened with GET or HEAD.'),
  unavailable: page('Temporarily unavailable', 'Please try again in a moment.'),
  internal: page('Something went wrong', 'Please try again later.'),
} as const;

/** Every answer of the link host: redirects depend on the user agent and count clicks. */
const NO_STORE = 'no-store';

/**
 * A small HTML page. HEAD gets the same status and headers without the body (node:http drops
 * the body of a HEAD response; it is passed anyway so Content-Length is the GET one).
 */
export function sendPage(
  res: ServerResponse,
  status: number,
  body: Buffer,
  extraHeaders?: Record<string, string>,
): void {
  res.writeHead(status, {
    'Cache-Control': NO_STORE,
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': body.length,
    'X-Content-Type-Options': 'nosniff',
    ...extraHeaders,
  });
  res.end(body);
}

/** A JSON document (the app association files). */
export function sendJsonDocument(
  res: ServerResponse,
  status: number,
  value: unknown,
  extraHeaders?: Record<string, string>,
): void {
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(status, {
    'Cache-Control': NO_STORE,
    'Content-Type': 'application/json',
    'Content-Length': body.length,
    'X-Content-Type-Options': 'nosniff',
    ...extraHeaders,
  });
  res.end(body);
}

export function sendRedirect(res: ServerResponse, location: string): void {
  res.writeHead(302, { 'Cache-Control': NO_STORE, Location: location, 'Content-Length': 0 });
  res.end();
}
