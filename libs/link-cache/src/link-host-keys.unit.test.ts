import calculateSlot from 'cluster-key-slot';
import {
  LINK_HOST_SHARDS,
  LINK_HOST_SHARD_TAGS,
  aliasOfEntryKey,
  CLICK_TOKEN_ALPHABET,
  batchName,
  callGroups,
  clickTokenShardCharacter,
  clickKeys,
  clickTokenKey,
  hostEntryPattern,
  hostGenerationKeys,
  linkCacheKeys,
  shardOfLink,
  shardOfTokenHash,
} from './link-host-keys';
import { hashClickToken } from './click-token-store';

const live = { subdomainKey: 'acme', environment: 'live' } as const;

/** Redis' MATCH glob, for the patterns used here (`*` and `\` escapes only). */
function globMatches(pattern: string, key: string): boolean {
  const source = pattern
    .split(/(\\.|\*)/)
    .map((part) =>
      part === '*' ? '.*' : part.replace(/^\\(.)$/, '$1').replace(/[.+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}$`, 's').test(key);
}

describe('link host keys', () => {
  it('pins the shard tags: every process and version must compute the same', () => {
    // The names deployments hold: changing one moves that shard's keys (data in flight lost).
    expect(LINK_HOST_SHARD_TAGS).toEqual([
      'lh0.40',
      'lh1.43',
      'lh2.60',
      'lh3.63',
      'lh4.23',
      'lh5.20',
      'lh6.3',
      'lh7.0',
      'lh8.1',
      'lh9.2',
      'lh10.43',
      'lh11.40',
      'lh12.62',
      'lh13.61',
      'lh14.20',
      'lh15.23',
    ]);
    // Shard i's tag hashes into the i-th sixteenth of the slots: one per range, in order, so a
    // cluster's masters (contiguous ranges) each hold their share.
    LINK_HOST_SHARD_TAGS.forEach((tag, shard) => {
      expect(tag.startsWith(`lh${shard}.`)).toBe(true);
      expect(Math.floor(calculateSlot(tag) / (16_384 / LINK_HOST_SHARDS))).toBe(shard);
    });
  });

  it('names the keys <prefix>:{<shard tag>}:<kind>:…', () => {
    const ref = { ...live, alias: 'promo' };
    const tag = LINK_HOST_SHARD_TAGS[shardOfLink(ref)];
    expect(linkCacheKeys('ls', ref)).toEqual({
      entry: `ls:{${tag}}:link-cache:live:acme:promo`,
      generation: `ls:{${tag}}:link-cache-gen:live:acme:promo`,
      hostGeneration: `ls:{${tag}}:link-cache-host-gen:live:acme`,
    });
    // A token's stored form starts with the character of its shard.
    expect(clickTokenKey('ls', 'Babc')).toBe(`ls:{${LINK_HOST_SHARD_TAGS[11]}}:click-token:Babc`);
    expect(shardOfTokenHash('Babc')).toBe(11);
    // One the link host never minted (any base62 first character) lands in some shard.
    expect(shardOfTokenHash('zabc')).toBe(CLICK_TOKEN_ALPHABET.indexOf('z') % LINK_HOST_SHARDS);
    const shard3 = LINK_HOST_SHARD_TAGS[3];
    expect(clickKeys('ls', 3)).toEqual({
      pending: `ls:{${shard3}}:clicks:pending`,
      batches: `ls:{${shard3}}:clicks:batches`,
      batchPrefix: `ls:{${shard3}}:clicks:batch:`,
    });
    expect(batchName(clickKeys('ls', 3), 5, 'u')).toEqual({
      key: `ls:{${shard3}}:clicks:batch:5:u`,
      id: '5:u',
      createdAt: 5,
    });
  });

  it("keeps what one call touches in one slot: an alias' keys, its click's token and pending hash", () => {
    for (let i = 0; i < 200; i += 1) {
      const ref = {
        subdomainKey: `app${i % 7}`,
        environment: i % 2 ? 'live' : 'test',
        alias: `a${i}`,
      } as const;
      const shard = shardOfLink(ref);
      // The link host mints a click's token in its alias' shard (ClickTokenMinter).
      const token = hashClickToken(`${clickTokenShardCharacter(shard)}token${i}`);
      expect(shardOfTokenHash(token)).toBe(shard);
      const keys = [
        ...Object.values(linkCacheKeys('ls', ref)),
        clickTokenKey('ls', token),
        ...Object.values(clickKeys('ls', shard)),
        batchName(clickKeys('ls', shard), Date.now(), 'uuid').key,
      ];
      expect(new Set(keys.map((key) => calculateSlot(key))).size).toBe(1);
    }
  });

  it('spreads aliases (and so their clicks and tokens) over every shard, about evenly', () => {
    const aliases = new Array<number>(LINK_HOST_SHARDS).fill(0);
    const n = 16_000;
    for (let i = 0; i < n; i += 1) aliases[shardOfLink({ ...live, alias: `alias${i}` })] += 1;
    for (const count of aliases) {
      expect(count).toBeGreaterThan((n / LINK_HOST_SHARDS) * 0.85);
      expect(count).toBeLessThan((n / LINK_HOST_SHARDS) * 1.15);
    }
  });

  it("has one host generation per shard, each in its shard's slot", () => {
    const keys = hostGenerationKeys('ls', live);
    expect(keys).toHaveLength(LINK_HOST_SHARDS);
    keys.forEach((key, shard) => {
      expect(calculateSlot(key)).toBe(calculateSlot(LINK_HOST_SHARD_TAGS[shard] ?? ''));
    });
    const ref = { ...live, alias: 'promo' };
    expect(keys[shardOfLink(ref)]).toBe(linkCacheKeys('ls', ref).hostGeneration);
  });

  it("finds a host's entry keys by pattern, and only its own", () => {
    const pattern = hostEntryPattern('ls', live);
    const entry = linkCacheKeys('ls', { ...live, alias: 'promo' }).entry;
    expect(globMatches(pattern, entry)).toBe(true);
    expect(aliasOfEntryKey('ls', live, entry)).toBe('promo');
    // Before shards (0.1): matched too, and told apart by the compat reader.
    expect(globMatches(pattern, 'ls:link-cache:live:acme:promo')).toBe(true);
    expect(aliasOfEntryKey('ls', live, 'ls:link-cache:live:acme:promo')).toBeNull();
    // Another host, the generation keys, another prefix that starts with this one.
    for (const other of [
      linkCacheKeys('ls', { ...live, subdomainKey: 'acme2', alias: 'promo' }).entry,
      linkCacheKeys('ls', { ...live, alias: 'promo' }).generation,
      linkCacheKeys('ls', { ...live, alias: 'promo' }).hostGeneration,
      linkCacheKeys('ls:x', { ...live, alias: 'promo' }).entry,
    ]) {
      if (globMatches(pattern, other)) expect(aliasOfEntryKey('ls', live, other)).toBeNull();
    }
    // An entry key put in the wrong shard is not this layout's.
    const wrongShard = entry.replace(
      /\{[^}]+\}/,
      `{${LINK_HOST_SHARD_TAGS[(shardOfLink({ ...live, alias: 'promo' }) + 1) % LINK_HOST_SHARDS]}}`,
    );
    expect(aliasOfEntryKey('ls', live, wrongShard)).toBeNull();
  });

  it('groups calls per shard on a cluster, and all in one on a single Redis', () => {
    const items = [1, 17, 2, 33, 18];
    expect(callGroups(items, (n) => n % 16, true)).toEqual([
      [1, 17, 33],
      [2, 18],
    ]);
    expect(callGroups(items, (n) => n % 16, false)).toEqual([items]);
    expect(callGroups([], (n: number) => n, false)).toEqual([]);
  });
});
