import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * Why an address is refused as a webhook destination. `metadata`: a cloud's instance-metadata
 * service (169.254.169.254, fd00:ec2::254, 100.100.100.200), told apart from the range it sits
 * in because it is the classic target. `reserved`: documentation, benchmarking, translation and
 * other special-purpose ranges.
 */
export type RefusedAddressClass =
  'loopback' | 'private' | 'link_local' | 'multicast' | 'metadata' | 'unspecified' | 'reserved';

const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200']);

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * ipaddr.js' range names with a class of their own; any other special-purpose range (6to4,
 * Teredo, NAT64, documentation, benchmarking...) is `reserved`, and `unicast` passes.
 */
const RANGE_CLASSES = new Map<string, RefusedAddressClass | undefined>([
  ['unicast', undefined],
  ['loopback', 'loopback'],
  ['private', 'private'],
  ['uniqueLocal', 'private'],
  ['carrierGradeNat', 'private'],
  ['linkLocal', 'link_local'],
  ['multicast', 'multicast'],
  ['broadcast', 'multicast'],
  ['unspecified', 'unspecified'],
]);

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries. */
function normalise(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/**
 * The class of an address no webhook may reach, or undefined for a public unicast one. Only
 * ipaddr.js' `unicast` range passes: every special-purpose range it knows (loopback, RFC 1918,
 * unique local, carrier-grade NAT, link-local, multicast, broadcast, unspecified, 6to4, Teredo,
 * NAT64, documentation...) is refused, so an address that embeds another cannot smuggle it in.
 */
export function refusedClassOf(text: string): RefusedAddressClass | undefined {
  const address = normalise(ipaddr.parse(text));
  if (
    METADATA_ADDRESSES.has(address.toNormalizedString()) ||
    METADATA_ADDRESSES.has(address.toString())
  ) {
    return 'metadata';
  }
  const range = address.range();
  return RANGE_CLASSES.has(range) ? RANGE_CLASSES.get(range) : 'reserved';
}

/**
 * Which addresses webhooks may reach: public unicast ones, plus the ranges an operator allows
 * explicitly (WEBHOOK_ALLOWED_CIDRS: on-premises receivers, tests), never a metadata address.
 */
export class AddressPolicy {
  private readonly allowed: [Address, number][];

  /** Throws on a range that is not CIDR notation (the config checks first: see parseCidrList). */
  constructor(allowedCidrs: readonly string[] = []) {
    this.allowed = allowedCidrs.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** Why `address` may not be reached, or undefined when it may. */
  refusal(address: string): RefusedAddressClass | undefined {
    const refused = refusedClassOf(address);
    // A cloud's metadata service stays refused inside an allowed range (an operator allowing
    // 169.254.0.0/16 or fd00::/8 for a receiver does not mean the instance's credentials).
    if (refused === undefined || refused === 'metadata') return refused;
    const parsed = normalise(ipaddr.parse(address));
    const allowed = this.allowed.some(
      ([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits),
    );
    return allowed ? undefined : refused;
  }
}

/** The CIDR ranges of a comma-separated list, or the entries that are not CIDR notation. */
export function parseCidrList(
  text: string,
): { ok: true; cidrs: string[] } | { ok: false; invalid: string[] } {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const invalid = entries.filter((entry) => {
    try {
      ipaddr.parseCIDR(entry);
      return false;
    } catch {
      return true;
    }
  });
  return invalid.length > 0 ? { ok: false, invalid } : { ok: true, cidrs: entries };
}

/** Resolves a host name to every address it has (dns.promises.lookup with all: true). */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export const resolveWithSystem: ResolveHost = (hostname) =>
  dnsLookup(hostname, { all: true, verbatim: true });

export type DestinationCheck =
  | { ok: true; addresses: LookupAddress[] }
  | { ok: false; reason: 'unresolvable' }
  | { ok: false; reason: 'refused_address'; address: string; class: RefusedAddressClass };

/**
 * Resolves a webhook URL's host and checks every address it resolves to (an IP literal is its
 * own only address): one refused address refuses the destination, so a name that answers a
 * public and a private address cannot be used to reach the private one. The caller connects
 * only to the addresses returned here (see the delivery's pinned lookup), so a second DNS answer
 * between check and connect (DNS rebinding) is never used.
 */
export async function checkDestination(
  url: URL,
  policy: AddressPolicy,
  resolve: ResolveHost = resolveWithSystem,
): Promise<DestinationCheck> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: LookupAddress[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(host);
    } catch {
      return { ok: false, reason: 'unresolvable' };
    }
  }
  if (addresses.length === 0) return { ok: false, reason: 'unresolvable' };
  for (const { address } of addresses) {
    const refused = policy.refusal(address);
    if (refused !== undefined)
      return { ok: false, reason: 'refused_address', address, class: refused };
  }
  return { ok: true, addresses };
}
