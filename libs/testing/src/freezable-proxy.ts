import type { AddressInfo, Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

/** One client connection and its upstream, with what waits while the proxy is frozen. */
interface Pair {
  client: Socket;
  upstream: Socket;
  toUpstream: Buffer[];
  toClient: Buffer[];
}

/**
 * A TCP proxy in front of a real Postgres or Redis that can freeze: while frozen it accepts
 * connections and reads bytes but delivers nothing either way, which is what a client sees of a
 * process stopped with SIGSTOP, a network blackhole or a stuck failover (its kernel still
 * accepts and acknowledges). `thaw` delivers everything held back, in order, as SIGCONT would.
 * `cut` resets every connection (a crash or restart). For in-process tests; the fault suite
 * freezes real processes instead.
 */
export class FreezableProxy {
  private readonly pairs = new Set<Pair>();
  private frozen = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<FreezableProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const proxy = new FreezableProxy(server, (server.address() as AddressInfo).port);
    server.on('connection', (client) => {
      proxy.accept(client, target);
    });
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) flush(pair);
  }

  /** Resets every open connection; new ones are accepted as before. */
  cut(): void {
    for (const pair of this.pairs) {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    const upstream = connect(target.port, target.host);
    const pair: Pair = { client, upstream, toUpstream: [], toClient: [] };
    this.pairs.add(pair);
    const end = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      pair.toUpstream.push(chunk);
      if (!this.frozen) flush(pair);
    });
    upstream.on('data', (chunk) => {
      pair.toClient.push(chunk);
      if (!this.frozen) flush(pair);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }
}

function flush(pair: Pair): void {
  for (const chunk of pair.toUpstream.splice(0)) pair.upstream.write(chunk);
  for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
}
