import { Registry } from 'prom-client';
import { HttpRequestMetrics, methodLabel } from './http-metrics';

describe('HttpRequestMetrics', () => {
  it('observes by route, method and status, one series per combination', async () => {
    const registry = new Registry();
    const http = new HttpRequestMetrics(registry);
    http.observe('/:alias', 'GET', 302, 0.002);
    http.observe('/:alias', 'GET', 302, 0.004);
    http.observe('/:alias', 'GET', 404, 0.001);
    const text = await registry.metrics();
    expect(text).toContain(
      'http_server_request_duration_seconds_count{route="/:alias",method="GET",status="302"} 2',
    );
    expect(text).toContain(
      'http_server_request_duration_seconds_count{route="/:alias",method="GET",status="404"} 1',
    );
    expect(text).toContain(
      'http_server_request_duration_seconds_bucket{le="0.0025",route="/:alias",method="GET",status="302"} 1',
    );
  });
});

describe('methodLabel', () => {
  it.each([
    ['GET', 'GET'],
    ['HEAD', 'HEAD'],
    ['POST', 'POST'],
    ['PROPFIND', 'other'],
    [undefined, 'other'],
  ])('%s is %s', (method, label) => {
    expect(methodLabel(method)).toBe(label);
  });
});
