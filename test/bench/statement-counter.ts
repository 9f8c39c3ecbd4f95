import { once } from 'node:events';
import type { AddressInfo, Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

/** Statements counted so far: simple queries (`Q`) and executions of the extended protocol (`E`). */
export interface StatementCounts {
  simple: number;
  extended: number;
}

/**
 * A TCP proxy in front of Postgres that counts the statements its clients send, read from the
 * frontend messages of the wire protocol: each `Q` (a simple query: one statement here, as no
 * service sends several in one string) and each `E` (Execute of a prepared or unnamed statement).
 * BEGIN and COMMIT are statements like any other. The shared Postgres has no pg_stat_statements
 * and must not be reconfigured; the proxy sees exactly the statements of the processes routed
 * through it, and no other client's.
 */
export class StatementCounter {
  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly counts: StatementCounts,
    private readonly sockets: Set<Socket>,
  ) {}

  static async start(target: { host: string; port: number }): Promise<StatementCounter> {
    const sockets = new Set<Socket>();
    const counts: StatementCounts = { simple: 0, extended: 0 };
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      upstream.pipe(client);
      const reader = new FrontendReader((type) => {
        if (type === 'Q') counts.simple += 1;
        if (type === 'E') counts.extended += 1;
      });
      client.on('data', (chunk: Buffer) => {
        reader.push(chunk);
        upstream.write(chunk);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new StatementCounter(server, (server.address() as AddressInfo).port, counts, sockets);
  }

  get statements(): number {
    return this.counts.simple + this.counts.extended;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }
}

/** SSLRequest and GSSENCRequest: answered with one byte, then the startup message follows. */
const ENCRYPTION_REQUESTS = new Set([80877103, 80877104]);

/** Splits a client's byte stream into messages: the untyped startup ones, then `type + length`. */
export class FrontendReader {
  private buffered = Buffer.alloc(0);
  private started = false;

  constructor(private readonly onMessage: (type: string) => void) {}

  push(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      if (!this.started) {
        if (this.buffered.length < 8) return;
        const length = this.buffered.readInt32BE(0);
        if (this.buffered.length < length) return;
        const code = this.buffered.readInt32BE(4);
        if (!ENCRYPTION_REQUESTS.has(code)) this.started = true;
        this.buffered = this.buffered.subarray(length);
        continue;
      }
      if (this.buffered.length < 5) return;
      const length = this.buffered.readInt32BE(1);
      if (this.buffered.length < 1 + length) return;
      this.onMessage(String.fromCharCode(this.buffered[0]!));
      this.buffered = this.buffered.subarray(1 + length);
    }
  }
}
