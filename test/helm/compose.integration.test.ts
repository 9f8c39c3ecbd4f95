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

describe('deploy/docker-compose.yml service configuration', () => {
  it('is accepted by each service, which knows every variable compose sets', async () => {
    const environments = Object.fromEntries(
      LONG_RUNNING.map((name) => [name, withDefaults(services[name].environment!)]),
    );
    const results = await loadServiceConfigs(environments);
    const known = new Set(LONG_RUNNING.flatMap((name) => results[name].known));
    for (const name of LONG_RUNNING) {
      expect({ name, problem: results[name].problem }).toEqual({ name, problem: undefined });
      const unknown = Object.keys(environments[name]).filter((variable) => !known.has(variable));
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    }
    expect(results.gateway.parsed).toMatchObject({ GATEWAY_PORT: 8080, NODE_ENV: 'production' });
    expect(results.redirect.parsed).toMatchObject({ LINK_DOMAIN: 'links.localhost' });
  });
});
