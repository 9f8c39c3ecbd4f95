import type { RequestHandler } from 'express';

/**
 * GET /api/v1/openapi.json, without a key: the document is public (it is committed too). Built
 * on the first request, not at startup, and the same text after that: it depends only on code.
 */
export function serveOpenApiDocument(documentText: () => string): RequestHandler {
  let text: string | undefined;
  return (_req, res) => {
    text ??= documentText();
    res.set('Cache-Control', 'public, max-age=300');
    res.type('application/json').send(text);
  };
}
