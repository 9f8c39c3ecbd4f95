import { redirectRouteLabel } from './route-label';

describe('redirectRouteLabel', () => {
  it.each([
    ['/summer-sale', true, '/:alias'],
    ['/abc123', true, '/:alias'],
    ['/.well-known/apple-app-site-association', true, '/.well-known/apple-app-site-association'],
    ['/.well-known/assetlinks.json', true, '/.well-known/assetlinks.json'],
    ['/healthz', false, '/healthz'],
    ['/readyz', false, '/readyz'],
    ['/some/deep/path', true, 'unmatched'],
    ['/summer-sale', false, 'unmatched'],
    ['/%E0%A4%A', true, 'unmatched'],
    [null, true, 'unmatched'],
  ])('%s on a link host: %s is %s', (path, onLinkHost, label) => {
    expect(redirectRouteLabel(path, onLinkHost)).toBe(label);
  });

  it('never returns an alias or a raw path', () => {
    for (const path of ['/summer-sale', '/x/y', '/healthz/extra', '/?a=b']) {
      expect(['/:alias', 'unmatched']).toContain(redirectRouteLabel(path, true));
    }
  });
});
