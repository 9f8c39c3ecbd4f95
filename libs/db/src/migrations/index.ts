import type { Migration } from 'kysely/migration';
import * as initial from './2026-11-22T00-00-00_initial';
import * as linkHost from './2026-11-22T02-00-00_link-host';
import * as linkTotals from './2026-11-22T03-00-00_link-totals';
import * as linkStatusIndexes from './2026-11-22T04-00-00_link-status-indexes';
import * as appLinkCounts from './2026-11-24T00-00-00_app-link-counts';
import * as appSide from './2026-11-25T00-00-00_app-side';
import * as installs from './2026-11-26T00-00-00_installs';
import * as idempotencyKeys from './2026-11-27T00-00-00_idempotency-keys';
import * as linkClicks from './2026-11-28T00-00-00_link-clicks';
import * as clickAnalytics from './2026-11-29T00-00-00_click-analytics';
import * as webhooks from './2026-11-30T00-00-00_webhooks';
import * as clickSource from './2026-12-01T00-00-00_click-source';

/** Every migration, keyed by its dated name. Kysely applies them in key order. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T00-00-00_initial': initial,
  '2026-11-22T02-00-00_link-host': linkHost,
  '2026-11-22T03-00-00_link-totals': linkTotals,
  '2026-11-22T04-00-00_link-status-indexes': linkStatusIndexes,
  '2026-11-24T00-00-00_app-link-counts': appLinkCounts,
  '2026-11-25T00-00-00_app-side': appSide,
  '2026-11-26T00-00-00_installs': installs,
  '2026-11-27T00-00-00_idempotency-keys': idempotencyKeys,
  '2026-11-28T00-00-00_link-clicks': linkClicks,
  '2026-11-29T00-00-00_click-analytics': clickAnalytics,
  '2026-11-30T00-00-00_webhooks': webhooks,
  '2026-12-01T00-00-00_click-source': clickSource,
};
