import type { RequestHandler } from 'express';
import { methodLabel, secondsSince } from '@linkservice/metrics';
import type { GatewayMetrics, RateLimit } from '../metrics';
import { routeLabelOf } from './route-label';

/** Only the creation routes and the SDK's abuse limit answer 429. */
function limitOf(originalUrl: string, sdkBasePath: string): RateLimit {
  return originalUrl.startsWith(sdkBasePath) ? 'sdk' : 'creation';
}

/**
 * First middleware: `http_server_request_duration_seconds` for every request once its response
 * is written, labelled with the route pattern it matched (route-label.ts), and
 * `linkservice_rate_limited_total` for a 429. A request whose client left before the answer was
 * written is not observed.
 */
export function requestMetrics(metrics: GatewayMetrics, sdkBasePath: string): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const status = res.statusCode;
      metrics.http.observe(
        routeLabelOf(res),
        methodLabel(req.method),
        status,
        secondsSince(started),
      );
      if (status === 429) metrics.rateLimit(limitOf(req.originalUrl, sdkBasePath));
    });
    next();
  };
}
