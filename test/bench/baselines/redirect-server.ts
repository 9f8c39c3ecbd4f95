import { createServer } from 'node:http';

/**
 * Baseline for the link host: a node:http server answering every request with the same fixed
 * 302, i.e. the ceiling for a redirect service on this machine (no lookup, no click counting).
 */

const port = Number(process.env.PORT);

const server = createServer((req, res) => {
  if (req.url === '/readyz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ready');
    return;
  }
  res.writeHead(302, {
    location: 'https://example.com/products/1',
    'cache-control': 'no-store',
    'content-length': '0',
  });
  res.end();
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
