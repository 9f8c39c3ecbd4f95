import { clickTokenField, clickTokenValue } from '@linkservice/link-cache';
import { parseBatch } from './click-flusher';

const HASH = 'ab'.repeat(32);

describe('parseBatch', () => {
  it('reads counts from link-id fields and tokens from t: fields', () => {
    expect(
      parseBatch([
        'lnk_a',
        '3',
        'lnk_b',
        '1',
        clickTokenField(HASH),
        clickTokenValue('lnk_a', 1_700_000_000_123),
      ]),
    ).toEqual({
      counts: new Map([
        ['lnk_a', 3],
        ['lnk_b', 1],
      ]),
      tokens: [{ tokenHash: HASH, linkId: 'lnk_a', clickedAt: 1_700_000_000_123 }],
    });
  });

  it.each([
    ['a count that is no positive integer', { lnk_a: 'x', lnk_b: '0', lnk_c: '1.5' }],
    [
      'a token hash that is not 64 hex digits',
      { 't:abc': 'lnk_a 1', [`t:${'AB'.repeat(32)}`]: 'lnk_a 1' },
    ],
    ['a token without link or time', { [`t:${HASH}`]: 'lnk_a' }],
    ['a token with a bad time', { [`t:${HASH}`]: 'lnk_a soon' }],
    ['a token with no link id', { [`t:${HASH}`]: ' 1' }],
  ])('skips %s, so it cannot make the batch fail', (_name, hash) => {
    expect(parseBatch(Object.entries(hash).flat())).toEqual({ counts: new Map(), tokens: [] });
  });
});
