import { checkReadiness } from '@linkservice/lifecycle';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import type { GracefulShutdown } from '../http/graceful-shutdown';
import type { ApiRoute } from '../http/routes';
import { pingDatabase } from './health.repository';

/**
 * Probes, outside /api/v1 and without auth. /healthz: the process serves HTTP. /readyz: it can
 * do useful work (Postgres and Redis answer) and is not shutting down.
 */
export function healthRoutes(deps: GatewayDeps, shutdown: GracefulShutdown): ApiRoute[] {
  const probes = { postgres: () => pingDatabase(deps.db), redis: () => deps.redis.ping() };
  return [
    {
      method: 'GET',
      path: '/healthz',
      handler: (_req, res) => {
        res.json({ status: 'ok' });
      },
    },
    {
      method: 'GET',
      path: '/readyz',
      handler: async (req, res) => {
        if (shutdown.inProgress) throw errors.unavailable('Shutting down.');
        const readiness = await checkReadiness(probes);
        if (!readiness.ready) {
          req.log.warn({ failures: readiness.failures }, 'not ready');
          const down = readiness.failures.map((f) => f.dependency).join(', ');
          throw errors.unavailable(`Not ready: ${down} did not answer.`);
        }
        res.json({ status: 'ready' });
      },
    },
  ];
}
