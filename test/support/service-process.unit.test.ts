import { ServiceProcess } from './service-process';

describe('ServiceProcess', () => {
  it('needs an entry point and port variable for anything but a service', () => {
    expect(() => new ServiceProcess({ name: 'baseline', port: 1, env: {} })).toThrow(
      /baseline is not a service/,
    );
  });
});
