import {
  batchName,
  clickKeys,
  clickTokenKey,
  linkCacheHostEntryPrefix,
  linkCacheKeys,
} from './link-host-keys';

/** What Redis Cluster hashes: the first `{…}` with something in it, else the whole key. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

const live = { subdomainKey: 'acme', environment: 'live' } as const;

describe('link host keys', () => {
  it('keeps the names the deployments hold', () => {
    expect(linkCacheKeys('ls', { ...live, alias: 'promo' })).toEqual({
      entry: 'ls:link-cache:live:acme:promo',
      generation: 'ls:link-cache-gen:live:acme:promo',
      hostGeneration: 'ls:link-cache-host-gen:live:acme',
    });
    expect(linkCacheHostEntryPrefix('ls', live)).toBe('ls:link-cache:live:acme:');
    expect(clickTokenKey('ls', 'abc')).toBe('ls:click-token:abc');
    expect(clickKeys('ls')).toEqual({
      pending: 'ls:clicks:pending',
      batches: 'ls:clicks:batches',
      batchPrefix: 'ls:clicks:batch:',
    });
    expect(batchName(clickKeys('ls'), 5, 'u')).toEqual({
      key: 'ls:clicks:batch:5:u',
      id: '5:u',
      createdAt: 5,
    });
  });

  it('starts every key with the keyspace, so one hash tag there puts them all in one slot', () => {
    // A prefix with a hash tag stands for the keyspace a move to Redis Cluster gives them.
    const prefix = '{ls}';
    const keys = [
      ...Object.values(linkCacheKeys(prefix, { ...live, alias: 'promo' })),
      ...Object.values(
        linkCacheKeys(prefix, { subdomainKey: 'other', environment: 'test', alias: 'x' }),
      ),
      clickTokenKey(prefix, 'abc'),
      clickKeys(prefix).pending,
      clickKeys(prefix).batches,
      batchName(clickKeys(prefix), Date.now(), 'uuid').key,
    ];
    expect(new Set(keys.map(hashTagOf))).toEqual(new Set(['ls']));
  });
});
