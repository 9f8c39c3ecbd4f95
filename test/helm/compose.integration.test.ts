import { generateKeyPairSync } from 'node:crypto';
import { LONG_RUNNING, composeServices as services } from './compose-file';
import { loadServiceConfigs } from './service-config';

/** The compose environment, checked by each compiled service's own config parser (node runs). */

/** What compose makes of `${VAR:-default}` when VAR is unset. */
function withDefaults(environment: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environment).map(([name, value]) => [
      name,
      value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1'),
    ]),
  );
}

/**
 * What the gateway's config sees: compose runs it as gateway-dev, which puts a development key
 * in an empty RECEIPT_SIGNING_KEY before the config is read (services/gateway/src/dev.main.ts).
 */
function asGatewayDevStarts(environment: Record<string, string>): Record<string, string> {
  return {
    ...environment,
    RECEIPT_SIGNING_KEY:
      environment.RECEIPT_SIGNING_KEY ||
      generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

describe('deploy/docker-compose.yml service configuration', () => {
  it('is accepted by each service, which knows every variable compose sets', async () => {
    const environments = Object.fromEntries(
      LONG_RUNNING.map((name) => {
        const environment = withDefaults(services[name].environment!);
        return [name, name === 'gateway' ? asGatewayDevStarts(environment) : environment];
      }),
    );
    const results = await loadServiceConfigs(environments);
    const known = new Set(LONG_RUNNING.flatMap((name) => results[name].known));
    for (const name of LONG_RUNNING) {
      expect({ name, problem: results[name].problem }).toEqual({ name, problem: undefined });
      const unknown = Object.keys(environments[name]).filter((variable) => !known.has(variable));
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    }
    expect(results.gateway.parsed).toMatchObject({
      GATEWAY_PORT: 8080,
      NODE_ENV: 'production',
      SDK_RATE_LIMIT_PER_MINUTE: 600,
      CLICK_TOKEN_TTL_SECONDS: 3600,
    });
    expect(results.redirect.parsed).toMatchObject({
      LINK_DOMAIN: 'links.localhost',
      CLICK_TOKEN_TTL_SECONDS: 3600,
    });
    expect(results.worker.parsed).toMatchObject({
      INSTALL_RETENTION_DAYS: 90,
      WEBHOOK_RETRY_SCHEDULE: [0, 5, 300, 1800, 7200, 18000, 36000, 36000],
    });
    // One key (32 bytes) seals webhook signing secrets in the gateway and opens them in the worker.
    expect(results.gateway.parsed!.WEBHOOK_ENCRYPTION_KEY).toEqual(
      results.worker.parsed!.WEBHOOK_ENCRYPTION_KEY,
    );
    expect((results.worker.parsed!.WEBHOOK_ENCRYPTION_KEY as { data: number[] }).data).toHaveLength(
      32,
    );
  });

  it("gives linkctl (compose run gateway linkctl …) the link host cache's Redis and prefix", async () => {
    const results = await loadServiceConfigs({
      linkctl: withDefaults(services.gateway.environment!),
      redirect: withDefaults(services.redirect.environment!),
    });
    expect(results.linkctl.problem).toBeUndefined();
    for (const name of ['REDIS_URL', 'REDIS_PREFIX', 'LINK_DOMAIN']) {
      expect({ name, value: results.linkctl.parsed![name] }).toEqual({
        name,
        value: results.redirect.parsed![name],
      });
    }
  });
});
