import type { Environment } from '@linkservice/db';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Why a webhook URL cannot be saved, before any address check: undefined when its form is
 * acceptable. https only in live (a live app's events carry its customers' data); http is
 * allowed in test. No credentials in the URL (they would be shown by GET and logged by
 * receivers' proxies) and no fragment (never sent).
 */
export function endpointUrlProblem(text: string, environment: Environment): string | undefined {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) {
    return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (environment === 'live' && url.protocol !== 'https:') return 'must use https in live';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.hash !== '') return 'must not have a fragment';
  return undefined;
}
