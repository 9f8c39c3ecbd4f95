/**
 * REMOVE in the release after the one that added the `source` dimension. A redirect of the
 * release before it writes pending-hash dimension fields of 11 parts, without `␟<source>` at
 * their end (click-analytics.ts encodeDimensions); during a rolling upgrade they meet the new
 * flusher in the same hash (and in batches it recovers from Redis). They were all taps of the
 * plain link URL: that release had no QR codes, so they count as `link`. Once no redirect of
 * that release runs and its batches are applied (CLICK_RECOVERY_AFTER_MS after it stopped),
 * no such field is left: this file and its caller go.
 */

/** `<link id>␟<hour>␟<h|b>␟<country>␟…␟<utm_campaign>`: the previous release's field. */
export const UNSOURCED_FIELD_PARTS = 11;

/** The previous release's field's parts with its source, `link`, appended. */
export function withLinkSource(parts: readonly string[]): string[] {
  return [...parts, 'link'];
}
