import { z } from 'zod';
import type { InstallPlatform } from '@linkservice/db';
import { parseSdkRequest } from './sdk-request';
import type { SdkRequestParse } from './sdk-request';

/**
 * The longest evidence string read. A link URL is far shorter, and Play's referrer is capped
 * below this; longer text is refused (422) rather than parsed.
 */
export const MAX_EVIDENCE_LENGTH = 4096;

/**
 * Optional evidence: any string, since the app hands over what the platform gave it (a Play
 * referrer of another campaign, a clipboard holding something else, an empty one). Text that
 * carries no click token and names no link is not an error: it just matches nothing.
 */
const evidence = z.string({ error: 'must be a string' }).max(MAX_EVIDENCE_LENGTH, {
  error: `must be at most ${MAX_EVIDENCE_LENGTH} characters`,
});

/** POST /sdk/installs's body (app-interface.md). */
export const installRequestSchema = z
  .strictObject({
    platform: z.enum(['ios', 'android'], {
      error: (issue) => (issue.input === undefined ? 'is required' : 'must be "ios" or "android"'),
    }),
    playReferrer: evidence.optional().meta({
      description:
        'Android: the raw Play install-referrer string; its `ls_click=<token>` pair matches.',
    }),
    clipboardUrl: evidence.optional().meta({
      description: 'iOS: a link URL carrying `ls_click=<token>` in its query.',
    }),
    openedUrl: evidence.optional().meta({
      description:
        'The link URL the app was opened with on its first launch; it names its link by itself (an `ls_click` it carries must be valid and is used up).',
    }),
  })
  .meta({ id: 'InstallReport', description: '`platform` is recorded, not used for matching.' });

export interface InstallReport {
  platform: InstallPlatform;
  playReferrer?: string;
  clipboardUrl?: string;
  openedUrl?: string;
}

export function parseInstallRequest(body: unknown): SdkRequestParse<InstallReport> {
  return parseSdkRequest(installRequestSchema, body);
}
