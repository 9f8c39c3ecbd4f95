import { z } from 'zod';

/**
 * A link to create, after the gateway validated and normalised the caller's input: tags deduped
 * and capped, expiresAt truncated to the second, omitted fields as null. This is what travels in
 * creation jobs; the worker re-parses it with this same schema.
 */
export const linkDraftSchema = z.object({
  /** null: the worker generates one. */
  alias: z.string().min(1).max(128).nullable(),
  webFallbackUrl: z.string(),
  iosFallbackUrl: z.string().nullable(),
  deepLinkData: z.record(z.string(), z.unknown()).nullable(),
  title: z.string().nullable(),
  campaign: z.string().nullable(),
  channel: z.string().nullable(),
  feature: z.string().nullable(),
  tags: z.array(z.string()),
  /** ISO 8601 UTC at second precision, e.g. 2027-01-01T00:00:00Z. */
  expiresAt: z.string().nullable(),
});

export type LinkDraft = z.infer<typeof linkDraftSchema>;
