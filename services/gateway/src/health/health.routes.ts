import { pingDatabase } from '@linkservice/db';
import { createProbes } from '@linkservice/lifecycle';
import type { GatewayDeps } from '../deps';
import type { ApiRoute } from '../http/routes';

/**
 * Probes, outside /api/v1 and without auth: libs/lifecycle's, which every service answers.
 * /healthz: the process serves HTTP. /readyz: Postgres and Redis answer and it is not shutting
 * down.
 */
export function healthRoutes(deps: GatewayDeps, isShuttingDown: () => boolean): ApiRoute[] {
  const probes = createProbes({
    probes: { postgres: () => pingDatabase(deps.db), redis: () => deps.redis.ping() },
    isShuttingDown,
    logger: deps.logger,
  });
  return [
    { method: 'GET', path: '/healthz', handler: probes.healthz },
    { method: 'GET', path: '/readyz', handler: probes.readyz },
  ];
}
