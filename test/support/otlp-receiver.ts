import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An OTLP/JSON attribute value; only the kinds the services' spans use are read. */
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValue[];
}

interface ExportTraceServiceRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

/** A received span, flattened: its resource's attributes beside its own. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined for a trace's root. */
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  durationMs: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

function plain(attributes: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    const found = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
    if (found !== undefined)
      result[key] = typeof found === 'string' && 'intValue' in value ? Number(found) : found;
  }
  return result;
}

/**
 * An OTLP/HTTP trace receiver inside the test (JSON encoding: the stack exports with
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/json). Keeps every span, and every raw request body so a test
 * can search what left the services byte for byte.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly rawBodies: string[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (req.url === '/v1/traces') receiver.receive(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return receiver;
  }

  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every received span of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private receive(body: string): void {
    this.rawBodies.push(body);
    const request = JSON.parse(body) as ExportTraceServiceRequest;
    for (const resourceSpans of request.resourceSpans ?? []) {
      const resource = plain(resourceSpans.resource?.attributes);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId === '' ? undefined : span.parentSpanId,
            name: span.name,
            kind: span.kind,
            durationMs:
              Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1_000_000,
            attributes: plain(span.attributes),
            resource,
          });
        }
      }
    }
  }
}

/** The trace as an indented tree: name, duration, and the service, one span per line. */
export function spanTree(spans: readonly ReceivedSpan[]): string {
  const byParent = new Map<string | undefined, ReceivedSpan[]>();
  const ids = new Set(spans.map((span) => span.spanId));
  for (const span of spans) {
    const parent =
      span.parentSpanId !== undefined && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number): void => {
    for (const span of byParent.get(parent) ?? []) {
      lines.push(
        `${'  '.repeat(depth)}${span.name}  ${span.durationMs.toFixed(1)} ms  [${String(span.resource['service.name'])}]`,
      );
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
