/**
 * The link-status rule's "the link host redirects it" (its status is not `expired`) as SQL text
 * over a row alias `row` with `archived_at` and `expires_at`, for the raw prepared statements
 * of the app interface (Kysely's `linkStatusIs` serves the list). Archived links redirect
 * whatever their expiry; otherwise until `expires_at`, exclusive. LINK_STATUS_CASES runs against
 * it in Postgres, as against every other copy of the rule.
 */
export function linkRedirectsSql(row: string, now = 'now()'): string {
  return `(${row}.archived_at IS NOT NULL OR ${row}.expires_at IS NULL OR ${row}.expires_at > ${now})`;
}
