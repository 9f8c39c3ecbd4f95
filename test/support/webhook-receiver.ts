import { once } from 'node:events';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got, as a customer's server sees it. */
export interface ReceivedDelivery {
  id: string;
  timestamp: string;
  signature: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body: Standard Webhooks' { type, timestamp, data }. */
  event: { type: string; timestamp: string; data: Record<string, unknown> };
  /** Which request of this receiver it was, from 1. */
  sequence: number;
}

/**
 * How the receiver answers a request: a status (and optional headers), after an optional delay;
 * `hold` keeps the request open until the receiver closes (a receiver that never answers).
 */
export type ReceiverAnswer =
  { status: number; headers?: Record<string, string>; delayMs?: number } | { hold: true };

/**
 * A local HTTP server standing in for a customer's webhook endpoint: records every request and
 * answers as `answer` says (204 by default). Listens on 127.0.0.1: the stack under test must
 * allow it (WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8) unless the test is about that refusal.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  answer: (delivery: ReceivedDelivery) => ReceiverAnswer = () => ({ status: 204 });
  private readonly held: ServerResponse[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Listens on `port` (0: any free one; a closed receiver's port to bring it back). */
  static async start(path = '/hook', port = 0): Promise<WebhookReceiver> {
    const server = createServer();
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    const bound = (server.address() as AddressInfo).port;
    const receiver = new WebhookReceiver(server, `http://127.0.0.1:${bound}${path}`);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        receiver.handle(req.headers, Buffer.concat(chunks).toString(), res);
      });
    });
    return receiver;
  }

  private handle(headers: IncomingHttpHeaders, body: string, res: ServerResponse): void {
    const header = (name: string) => {
      const value = headers[name];
      return typeof value === 'string' ? value : '';
    };
    const delivery: ReceivedDelivery = {
      id: header('webhook-id'),
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      headers,
      body,
      event: JSON.parse(body) as ReceivedDelivery['event'],
      sequence: this.received.length + 1,
    };
    this.received.push(delivery);
    const answer = this.answer(delivery);
    if ('hold' in answer) {
      this.held.push(res);
      return;
    }
    const send = () => res.writeHead(answer.status, answer.headers).end();
    if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
    else send();
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The distinct event ids received, in first-arrival order. */
  eventIds(): string[] {
    return [...new Set(this.received.map(({ id }) => id))];
  }

  /** Whether Standard Webhooks' own verifier accepts the delivery under `secret`. */
  static verifies(delivery: ReceivedDelivery, secret: string): boolean {
    try {
      new Webhook(secret).verify(delivery.body, {
        'webhook-id': delivery.id,
        'webhook-timestamp': delivery.timestamp,
        'webhook-signature': delivery.signature,
      });
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }
}
