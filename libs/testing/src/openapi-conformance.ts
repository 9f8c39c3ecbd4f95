import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Checks an answer of the API against the OpenAPI document, so that a test that receives an
 * answer the document does not describe fails, whatever the test itself asserts. The document
 * cannot lie for long: every route test goes through this (the gateway harness's api(), the
 * stack's sendApiRequest()).
 */

/** An answer as a test received it. */
export interface ReceivedAnswer {
  method: string;
  /** Absolute path, query allowed: `/api/v1/links/lnk_1?x=1`. */
  path: string;
  status: number;
  headers: Headers;
  /** The parsed JSON body, undefined when the answer was not JSON. */
  body: unknown;
  text: string;
}

interface HeaderObject {
  required?: boolean;
  schema?: object;
  $ref?: string;
}

interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: object }>;
  $ref?: string;
}

interface OperationObject {
  operationId?: string;
  responses?: Record<string, ResponseObject>;
}

interface DocumentShape {
  servers?: { url: string }[];
  paths?: Record<string, Record<string, OperationObject>>;
  components?: { headers?: Record<string, HeaderObject> };
}

/** The repository's committed document (kept equal to the code's by the drift check). */
export function committedOpenApiDocument(): object {
  return JSON.parse(
    readFileSync(join(__dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8'),
  ) as object;
}

const DOCUMENT_ID = 'openapi.json';

/** The one slug of each failure status (the gateway's ERROR_STATUS, read the other way). */
const SLUG_OF_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_body',
  401: 'unauthorised',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'expired',
  413: 'payload_too_large',
  422: 'invalid_request',
  429: 'rate_limited',
  500: 'internal',
  503: 'unavailable',
};

/** A JSON pointer segment (`/links` → `~1links`). */
function pointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

interface PathMatcher {
  template: string;
  pattern: RegExp;
  params: number;
}

export interface ConformanceOptions {
  /** Answers of requests this says yes to are not checked (a test's own extra routes). */
  skip?: (method: string, path: string) => boolean;
}

export class OpenApiConformance {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly basePath: string;
  private readonly paths: PathMatcher[];

  constructor(
    private readonly document: object,
    private readonly options: ConformanceOptions = {},
  ) {
    addFormats(this.ajv);
    // RFC 3987 IRIs (fallback URLs keep non-ASCII characters as sent); ajv-formats has no `iri`.
    this.ajv.addFormat('iri', /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/u);
    this.ajv.addSchema({ ...document, $id: DOCUMENT_ID });
    const shape = document as DocumentShape;
    this.basePath = shape.servers?.[0]?.url ?? '';
    // Literal paths before templated ones: `/links/batch` is its own path, not a link id.
    this.paths = Object.keys(shape.paths ?? {})
      .map((template) => ({
        template,
        pattern: new RegExp(
          `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
        ),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  /** Throws, saying what is wrong, when the document does not describe the answer. */
  check(answer: ReceivedAnswer): void {
    // Appended, not resolved: `//api/v1/…` is a path here, not a host.
    const path = new URL(`http://x${answer.path}`).pathname;
    const method = answer.method.toUpperCase();
    if (method === 'OPTIONS') return; // CORS preflights: not part of the contract.
    if (this.basePath !== '' && path !== this.basePath && !path.startsWith(`${this.basePath}/`)) {
      return;
    }
    if (this.options.skip?.(method, path)) return;
    // express routes ignore one trailing slash (non-strict routing): `/app/` is `/app`.
    const relative = path.slice(this.basePath.length).replace(/(?<=.)\/$/, '');
    const problems = this.problemsOf(answer, method, relative);
    if (problems.length > 0) {
      throw new Error(
        `The answer to ${method} ${answer.path} does not match the API document (docs/openapi.json):\n` +
          `${problems.map((problem) => `  - ${problem}`).join('\n')}\n` +
          `  status ${answer.status}, body: ${answer.text.slice(0, 2000)}`,
      );
    }
  }

  private problemsOf(answer: ReceivedAnswer, method: string, relative: string): string[] {
    const matched = this.paths.find(({ pattern }) => pattern.test(relative));
    // express answers HEAD with the GET route, without a body.
    const operationMethod = method === 'HEAD' ? 'get' : method.toLowerCase();
    const operation = matched
      ? (this.document as DocumentShape).paths?.[matched.template]?.[operationMethod]
      : undefined;
    if (!matched || !operation) return this.undocumentedProblems(answer, method, relative, matched);

    const status = String(answer.status);
    const response = operation.responses?.[status];
    if (response?.$ref) {
      throw new Error(`the checker does not resolve response $refs (${response.$ref}); inline it`);
    }
    if (!response) {
      return [
        `status ${status} is not documented for ${operationMethod.toUpperCase()} ${matched.template} (${operation.operationId ?? 'no operationId'}); documented: ${Object.keys(operation.responses ?? {}).join(', ')}`,
      ];
    }
    const at = `#/paths/${pointer(matched.template)}/${operationMethod}/responses/${status}`;
    return [
      ...this.headerProblems(answer, response),
      ...(method === 'HEAD' ? [] : this.bodyProblems(answer, response, at)),
    ];
  }

  /**
   * A method or path the document does not have: only what the service answers to any request
   * may come back (the key refused, the SDK's abuse limit, our own failure), then 405 with the
   * path's methods in Allow for a known path, 404 for an unknown one; always the error body
   * whose slug is the status's own.
   */
  private undocumentedProblems(
    answer: ReceivedAnswer,
    method: string,
    relative: string,
    matched: PathMatcher | undefined,
  ): string[] {
    if (answer.status < 400) {
      return [`${method} on this path is not in the document, yet it answered ${answer.status}`];
    }
    const allowed = new Set([401, 500, 503, matched ? 405 : 404]);
    if (relative.startsWith('/sdk/')) allowed.add(429);
    if (!allowed.has(answer.status)) {
      return [
        `${method} ${matched ? 'is not an operation of this path' : 'on a path the document does not have'}, yet it answered ${answer.status} (expected one of ${[...allowed].sort().join(', ')})`,
      ];
    }
    const problems =
      method === 'HEAD' ? [] : this.validate('#/components/schemas/Error', answer.body, 'body');
    const slug = (answer.body as { error?: unknown } | undefined)?.error;
    if (method !== 'HEAD' && slug !== SLUG_OF_STATUS[answer.status]) {
      problems.push(
        `a ${answer.status} carries error "${SLUG_OF_STATUS[answer.status]}", not ${JSON.stringify(slug)}`,
      );
    }
    if (!answer.headers.has('x-request-id')) problems.push('header X-Request-Id is missing');
    if (answer.status === 405 && matched) {
      const documented = Object.keys(
        (this.document as DocumentShape).paths?.[matched.template] ?? {},
      ).map((name) => name.toUpperCase());
      if (documented.includes('GET')) documented.push('HEAD');
      const expected = documented.sort().join(', ');
      if (answer.headers.get('allow') !== expected) {
        problems.push(
          `a 405 must carry Allow: ${expected}, not ${String(answer.headers.get('allow'))}`,
        );
      }
    }
    if (answer.status === 401 && !answer.headers.has('www-authenticate')) {
      problems.push('a 401 must carry WWW-Authenticate');
    }
    return problems;
  }

  private headerProblems(answer: ReceivedAnswer, response: ResponseObject): string[] {
    const problems: string[] = [];
    for (const [name, declared] of Object.entries(response.headers ?? {})) {
      const header = this.resolveHeader(declared);
      const value = answer.headers.get(name);
      if (value === null) {
        if (header.required || name === 'X-Request-Id') {
          problems.push(`documented required header ${name} is missing`);
        }
        continue;
      }
      if (header.schema) {
        problems.push(...this.validateSchema(header.schema, value, `header ${name}`));
      }
    }
    return problems;
  }

  private bodyProblems(answer: ReceivedAnswer, response: ResponseObject, at: string): string[] {
    // An answer that is not JSON (an image): its Content-Type must be one the document lists.
    const mediaTypes = Object.keys(response.content ?? {});
    if (mediaTypes.length > 0 && !mediaTypes.includes('application/json')) {
      const received = answer.headers.get('content-type')?.split(';', 1)[0]?.trim();
      return received !== undefined && mediaTypes.includes(received)
        ? []
        : [
            `Content-Type ${String(received)} is not one the document lists: ${mediaTypes.join(', ')}`,
          ];
    }
    const content = response.content?.['application/json'];
    if (!content?.schema) return [];
    if (answer.body === undefined) return ['the body is not JSON, but the document says it is'];
    return this.validate(`${at}/content/application~1json/schema`, answer.body, 'body');
  }

  private resolveHeader(header: HeaderObject): HeaderObject {
    if (!header.$ref) return header;
    const name = header.$ref.replace('#/components/headers/', '');
    return (this.document as DocumentShape).components?.headers?.[name] ?? {};
  }

  private validate(ref: string, value: unknown, what: string): string[] {
    return this.validateSchema({ $ref: `${DOCUMENT_ID}${ref}` }, value, what);
  }

  private validateSchema(schema: object, value: unknown, what: string): string[] {
    const key = JSON.stringify(schema);
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.validators.set(key, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map(
      (error) =>
        `${what}${error.instancePath || ''}: ${error.message ?? 'is invalid'}${
          Object.keys(error.params).length > 0 ? ` ${JSON.stringify(error.params)}` : ''
        }`,
    );
  }
}
