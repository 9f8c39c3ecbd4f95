// One implementation for every test tier: libs/testing's, which the services' in-process tests use.
export { createKey, createTenant, revokeKey } from '@linkservice/testing';
export type { Tenant, TenantKey, TenantOptions } from '@linkservice/testing';
