import { baseEnvSchema, ownMetricsPort, parseEnv, port, withOwnMetricsPort } from './index';

describe('a service metrics port (ownMetricsPort, withOwnMetricsPort)', () => {
  const schema = baseEnvSchema.extend({
    METRICS_PORT: port(9464),
    GATEWAY_METRICS_PORT: ownMetricsPort,
  });
  const load = (env: Record<string, string>) => {
    const config = parseEnv(schema, env);
    return withOwnMetricsPort(config, config.GATEWAY_METRICS_PORT).METRICS_PORT;
  };

  it("takes the service's own variable over METRICS_PORT, then METRICS_PORT, then the default", () => {
    expect(load({ METRICS_PORT: '9500', GATEWAY_METRICS_PORT: '9600' })).toBe(9600);
    expect(load({ GATEWAY_METRICS_PORT: '0' })).toBe(0);
    expect(load({ METRICS_PORT: '9500' })).toBe(9500);
    expect(load({ METRICS_PORT: '9500', GATEWAY_METRICS_PORT: '' })).toBe(9500);
    expect(load({})).toBe(9464);
  });

  it('names the variable that is wrong', () => {
    expect(() => load({ GATEWAY_METRICS_PORT: '70000' })).toThrow(
      expect.objectContaining({ problems: ['GATEWAY_METRICS_PORT: must be a port number'] }),
    );
  });
});
