import type { Link } from '../src';

/** A whole link as the API answers it, named by its alias: what the tests' gateways reply. */
export function linkNamed(alias: string): Link {
  return {
    id: `lnk_${alias}`,
    alias,
    url: `https://acme.links.localhost/${alias}`,
    environment: 'live',
    webFallbackUrl: 'https://acme.example/web',
    iosFallbackUrl: null,
    deepLinkData: null,
    title: null,
    campaign: null,
    channel: null,
    feature: null,
    tags: [],
    expiresAt: null,
    archivedAt: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    clickCount: 0,
    status: 'active',
  };
}
