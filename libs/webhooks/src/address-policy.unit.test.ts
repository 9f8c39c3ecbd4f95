import type { LookupAddress } from 'node:dns';
import { AddressPolicy, checkDestination, parseCidrList, refusedClassOf } from './address-policy';

describe('refusedClassOf', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fe80::1', 'link_local'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    // Addresses that embed another: NAT64 of 127.0.0.1, 6to4 of 127.0.0.1, Teredo.
    ['64:ff9b::7f00:1', 'reserved'],
    ['2002:7f00:1::', 'reserved'],
    ['2001::1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
  ])('%s is refused as %s', (address, refused) => {
    expect(refusedClassOf(address)).toBe(refused);
  });

  test.each(['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s passes', (address) => {
    expect(refusedClassOf(address)).toBeUndefined();
  });
});

describe('AddressPolicy', () => {
  test('allows what its CIDR ranges hold, in the same family, and nothing else', () => {
    const policy = new AddressPolicy(['127.0.0.0/8', '10.1.0.0/16']);
    expect(policy.refusal('127.0.0.1')).toBeUndefined();
    expect(policy.refusal('127.255.0.9')).toBeUndefined();
    // A mapped address is the IPv4 address it carries.
    expect(policy.refusal('::ffff:127.0.0.1')).toBeUndefined();
    expect(policy.refusal('10.1.2.3')).toBeUndefined();
    expect(policy.refusal('10.2.0.1')).toBe('private');
    expect(policy.refusal('::1')).toBe('loopback');
    expect(policy.refusal('169.254.169.254')).toBe('metadata');
    expect(policy.refusal('8.8.8.8')).toBeUndefined();
  });

  test('refuses a metadata address even inside an allowed range', () => {
    const policy = new AddressPolicy(['169.254.0.0/16', 'fd00::/8', '100.64.0.0/10']);
    expect(policy.refusal('169.254.10.1')).toBeUndefined();
    expect(policy.refusal('169.254.169.254')).toBe('metadata');
    expect(policy.refusal('fd00:ec2::254')).toBe('metadata');
    expect(policy.refusal('100.100.100.200')).toBe('metadata');
  });

  test('without ranges refuses every special-purpose address', () => {
    const policy = new AddressPolicy();
    expect(policy.refusal('127.0.0.1')).toBe('loopback');
    expect(policy.refusal('::ffff:10.0.0.1')).toBe('private');
  });
});

describe('parseCidrList', () => {
  test('reads a comma-separated list and names the entries that are not CIDR', () => {
    expect(parseCidrList(' 127.0.0.0/8, ::1/128 ,')).toEqual({
      ok: true,
      cidrs: ['127.0.0.0/8', '::1/128'],
    });
    expect(parseCidrList('127.0.0.1,10.0.0.0/8,nope')).toEqual({
      ok: false,
      invalid: ['127.0.0.1', 'nope'],
    });
  });
});

describe('checkDestination', () => {
  const resolveTo =
    (...addresses: string[]) =>
    (): Promise<LookupAddress[]> =>
      Promise.resolve(
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );

  test('returns every address a name resolves to when all may be reached', async () => {
    expect(
      await checkDestination(
        new URL('https://hooks.example/x'),
        new AddressPolicy(),
        resolveTo('8.8.8.8', '2606:4700:4700::1111'),
      ),
    ).toEqual({
      ok: true,
      addresses: [
        { address: '8.8.8.8', family: 4 },
        { address: '2606:4700:4700::1111', family: 6 },
      ],
    });
  });

  test('one refused address refuses the name', async () => {
    expect(
      await checkDestination(
        new URL('https://hooks.example/x'),
        new AddressPolicy(),
        resolveTo('8.8.8.8', '169.254.169.254'),
      ),
    ).toEqual({
      ok: false,
      reason: 'refused_address',
      address: '169.254.169.254',
      class: 'metadata',
    });
  });

  test('an IP literal is checked without resolving, brackets and all', async () => {
    const resolve = jest.fn(resolveTo('8.8.8.8'));
    expect(
      await checkDestination(
        new URL('http://[::ffff:10.0.0.1]:8080/'),
        new AddressPolicy(),
        resolve,
      ),
    ).toMatchObject({ ok: false, reason: 'refused_address', class: 'private' });
    expect(
      await checkDestination(new URL('http://[64:ff9b::7f00:1]/'), new AddressPolicy(), resolve),
    ).toMatchObject({ ok: false, reason: 'refused_address', class: 'reserved' });
    expect(resolve).not.toHaveBeenCalled();
  });

  test('a name that does not resolve, or resolves to nothing, is unresolvable', async () => {
    const policy = new AddressPolicy();
    expect(
      await checkDestination(new URL('https://nowhere.example/'), policy, () =>
        Promise.reject(new Error('ENOTFOUND')),
      ),
    ).toEqual({ ok: false, reason: 'unresolvable' });
    expect(await checkDestination(new URL('https://empty.example/'), policy, resolveTo())).toEqual({
      ok: false,
      reason: 'unresolvable',
    });
  });
});
