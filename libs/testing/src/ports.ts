import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the OS picks it for a listener on port 0,
 * which is then closed. Another process may take it before the caller binds it, so callers that
 * spawn a server retry with a new port when the server reports EADDRINUSE (see stack.ts).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('listener on port 0 reported no TCP address'));
        return;
      }
      server.close(() => {
        resolve(address.port);
      });
    });
  });
}
