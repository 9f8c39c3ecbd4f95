import type { AuthContext } from '../auth/auth-context';
import type {
  KeyedResolve,
  OpenedLinkRef,
  ResolvableLink,
  ResolveRepository,
} from './resolve.repository';
import { ResolveService } from './resolve.service';

/** The resolve rules over a fake repository: which lookup is asked for, and what is answered. */

const DOMAIN = 'go.example.test';
const NOW = new Date('2030-01-01T12:00:00.000Z');
const KEY_HASH = Buffer.alloc(32, 7);

function auth(environment: 'live' | 'test' = 'live'): AuthContext {
  return {
    keyId: 'key_1',
    appId: 'app_1',
    environment,
    type: 'publishable',
    app: { id: 'app_1', name: 'Acme', subdomainKey: 'acme' },
  };
}

function link(overrides: Partial<ResolvableLink> = {}): ResolvableLink {
  return {
    id: 'lnk_1',
    alias: 'spring',
    environment: 'live',
    deepLinkData: { screen: 'promo' },
    expiresAt: null,
    archivedAt: null,
    ...overrides,
  };
}

/** A repository answering `found`, remembering what it was asked. */
function serviceWith(found: KeyedResolve | undefined) {
  const asked: (OpenedLinkRef | null)[] = [];
  const repository = {
    findForKey: (hash: Buffer, ref: OpenedLinkRef | null) => {
      expect(hash).toBe(KEY_HASH);
      asked.push(ref);
      return Promise.resolve(found);
    },
  } as unknown as ResolveRepository;
  return { service: new ResolveService(repository, DOMAIN), asked };
}

describe('ResolveService.resolveForKey', () => {
  it('asks for the alias on the host the URL names, and answers the link', async () => {
    const { service, asked } = serviceWith({ auth: auth(), link: link(), now: NOW });
    const result = await service.resolveForKey(
      KEY_HASH,
      'http://ACME.go.example.test:8080/spring?a=1&a=2&b=#x',
    );
    expect(asked).toEqual([
      {
        host: { subdomainKey: 'acme', environment: 'live' },
        alias: 'spring',
        query: { a: '2', b: '' },
      },
    ]);
    expect(result).toEqual({
      auth: auth(),
      loaded: {
        kind: 'resolved',
        answer: {
          link: {
            id: 'lnk_1',
            alias: 'spring',
            url: 'https://acme.go.example.test/spring',
            environment: 'live',
          },
          deepLinkData: { screen: 'promo' },
          query: { a: '2', b: '' },
        },
      },
    });
  });

  it('builds a test link URL on the test host', async () => {
    const { service } = serviceWith({
      auth: auth('test'),
      link: link({ environment: 'test' }),
      now: NOW,
    });
    const result = await service.resolveForKey(
      KEY_HASH,
      'https://acme-test.go.example.test/spring',
    );
    expect(result?.loaded).toMatchObject({
      kind: 'resolved',
      answer: { link: { url: 'https://acme-test.go.example.test/spring', environment: 'test' } },
    });
  });

  it('still checks the key for a URL that names no link', async () => {
    const { service, asked } = serviceWith({ auth: auth(), link: undefined, now: NOW });
    for (const url of ['nope', 'https://example.com/spring', 'https://acme.go.example.test/a/b']) {
      expect(await service.resolveForKey(KEY_HASH, url)).toEqual({
        auth: auth(),
        loaded: { kind: 'not_found' },
      });
    }
    expect(asked).toEqual([null, null, null]);
  });

  it('answers not_found when the key may read no such link', async () => {
    const { service } = serviceWith({ auth: auth(), link: undefined, now: NOW });
    expect(
      (await service.resolveForKey(KEY_HASH, 'https://acme.go.example.test/spring'))?.loaded,
    ).toEqual({ kind: 'not_found' });
  });

  it('answers undefined when no active key has the hash', async () => {
    const { service } = serviceWith(undefined);
    expect(await service.resolveForKey(KEY_HASH, 'https://acme.go.example.test/spring')).toBe(
      undefined,
    );
  });

  it.each([
    ['expired at the read', { expiresAt: NOW }, 'expired'],
    ['expired before', { expiresAt: new Date(NOW.getTime() - 1) }, 'expired'],
    ['expiring just after', { expiresAt: new Date(NOW.getTime() + 1) }, 'resolved'],
    ['archived', { archivedAt: NOW }, 'resolved'],
    ['archived and expired', { archivedAt: NOW, expiresAt: new Date(0) }, 'resolved'],
  ] as const)('judges a link %s by the database clock', async (_case, overrides, kind) => {
    const { service } = serviceWith({ auth: auth(), link: link(overrides), now: NOW });
    const result = await service.resolveForKey(KEY_HASH, 'https://acme.go.example.test/spring');
    expect(result?.loaded.kind).toBe(kind);
  });
});
