import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { apiRoutes, sdkRoutes } from '../app';
import type { ApiRoute } from '../http/routes';
import { apiDocument, listingOnlyDeps } from './api-document';
import { buildOpenApiDocument, documentText } from './document';
import { COMMITTED_DOCUMENT, DRIFT_MESSAGE, firstDifference } from './openapi.main';
import { absolutePath, packageValuesFiles } from './package-values';

const generated = documentText(apiDocument());

describe('the API document', () => {
  it('is what docs/openapi.json holds (else run `pnpm openapi`)', () => {
    const committed = readFileSync(COMMITTED_DOCUMENT, 'utf8');
    if (committed !== generated) {
      throw new Error(`${DRIFT_MESSAGE}\n${firstDifference(committed, generated)}`);
    }
  });

  it.each(packageValuesFiles(apiDocument()))(
    'gives the packages its values ($path, else run `pnpm openapi`)',
    (file) => {
      const committed = readFileSync(absolutePath(file), 'utf8');
      if (committed !== file.text) {
        throw new Error(`${DRIFT_MESSAGE}\n${firstDifference(committed, file.text)}`);
      }
    },
  );

  it('tells the client the secret-key slugs and the app SDK every slug', () => {
    const [client, appSdk] = packageValuesFiles(apiDocument()).map((file) => file.text);
    expect(client).toContain(`export type LinkSort = 'newest' | 'oldest' | 'alias' | 'clicks';`);
    expect(client).toContain('  method_not_allowed: 405,');
    // A QR code of an expired link is `expired`, as resolve's is.
    expect(client).toContain('expired: 410');
    expect(appSdk).toContain(`| 'expired' |`);
  });

  it('validates as OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(generated);
    expect(validator.version).toBe('3.1');
    expect(result).toEqual({ valid: true });
  });

  it('has an operation for every mounted route, and none more', () => {
    const deps = listingOnlyDeps();
    const document = apiDocument();
    const documented = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const mounted = [
      ...apiRoutes(deps).map((route) => `${route.method} ${route.path}`),
      ...sdkRoutes(deps).map((route) => `${route.method} /sdk${route.path}`),
      'GET /openapi.json',
    ].map((route) => route.replace(/:(\w+)/g, '{$1}'));
    expect(documented.sort()).toEqual(mounted.sort());
  });

  it('cannot be built while a route has no operation documentation', () => {
    const undocumented: ApiRoute = { method: 'GET', path: '/nowhere', handler: () => undefined };
    expect(() => buildOpenApiDocument({ api: [undocumented], sdk: [] })).toThrow(
      'GET /nowhere has no openapi member',
    );
  });

  it('gives every operation an id, a summary, and X-Request-Id on every answer', () => {
    const document = apiDocument();
    for (const item of Object.values(document.paths ?? {})) {
      for (const operation of Object.values(item) as {
        operationId?: string;
        summary?: string;
        responses: Record<string, { headers?: Record<string, unknown> }>;
      }[]) {
        expect(operation.operationId).toBeTruthy();
        expect(operation.summary).toBeTruthy();
        for (const answer of Object.values(operation.responses)) {
          expect(answer.headers).toHaveProperty('X-Request-Id');
        }
      }
    }
  });
});
