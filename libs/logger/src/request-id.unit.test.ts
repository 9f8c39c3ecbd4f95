import { requestIdFrom } from './request-id';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('requestIdFrom', () => {
  it.each(['abc', 'edge-7f3a.1:2_x', 'x'.repeat(128)])('keeps the sane id %s', (id) => {
    expect(requestIdFrom(id)).toBe(id);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['too long', 'x'.repeat(129)],
    ['with spaces', 'a b'],
    ['with markup', '<script>'],
    ['with a line break', 'a\nb'],
    ['repeated', ['a', 'b']],
  ])('replaces a %s id with a fresh UUID', (_what, offered) => {
    const id = requestIdFrom(offered);
    expect(id).toMatch(UUID);
    expect(requestIdFrom(offered)).not.toBe(id);
  });
});
