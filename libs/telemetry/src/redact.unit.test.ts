import { redactUrl } from './index';

describe('redactUrl', () => {
  it.each([
    ['/api/v1/sdk/installs/ins_01JD3Q', '/api/v1/sdk/installs/:installId'],
    ['/api/v1/sdk/installs/ins_01JD3Q?x=1', '/api/v1/sdk/installs/:installId?x=1'],
    [
      'http://h:1/api/v1/sdk/installs/anything/else',
      'http://h:1/api/v1/sdk/installs/:installId/else',
    ],
    ['/api/v1/sdk/installs', '/api/v1/sdk/installs'],
    ['/api/v1/links/lnk_1', '/api/v1/links/lnk_1'],
  ])('%s -> %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });
});
