import { randomBytes } from 'node:crypto';
import type { FetchLike } from '@linkservice/app-sdk';
import type { ApiResponse } from '@linkservice/testing';
import { linkOf, sendRequest } from '@linkservice/testing';
import type { Link } from '@linkservice/contracts';
import { createAppWithLinkctl, stackLinkctl } from './linkctl';
import type { Stack } from './stack';
import { sendApiRequest } from './stack';

export const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
export const ANDROID =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36';

/**
 * One customer's app on a running stack, made as an operator makes it (linkctl): its secret key
 * for the server's calls, a publishable key per environment for the app's.
 */
export interface StackApp {
  appId: string;
  subdomainKey: string;
  /** `<subdomainKey>.<link domain>`: the live link host. */
  linkHost: string;
  /** `<subdomainKey>-test.<link domain>`: the test environment's link host. */
  testLinkHost: string;
  secret: string;
  publishable: { live: string; test: string };
}

export async function createStackApp(stack: Stack, name: string): Promise<StackApp> {
  const { subdomainKey, app } = await createAppWithLinkctl(
    stack,
    name,
    name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
  );
  const appId = app.id;
  const key = async (environment: 'live' | 'test', type: 'secret' | 'publishable') => {
    const made = (await stackLinkctl(
      stack,
      ...['key', 'create', '--app', appId, '--env', environment, '--type', type],
    )) as { secret: string };
    return made.secret;
  };
  return {
    appId,
    subdomainKey,
    linkHost: `${subdomainKey}.${stack.linkDomain}`,
    testLinkHost: `${subdomainKey}-test.${stack.linkDomain}`,
    secret: await key('live', 'secret'),
    publishable: { live: await key('live', 'publishable'), test: await key('test', 'publishable') },
  };
}

/** A call of the secret-key API, as the customer's server makes it. */
export function callApi(
  stack: Stack,
  app: StackApp,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiResponse> {
  return sendApiRequest(`${stack.apiUrl}${path}`, { method, key: app.secret, body });
}

/** A live link made by the customer's server, under a random alias. */
export async function createStackLink(
  stack: Stack,
  app: StackApp,
  fields: Record<string, unknown>,
): Promise<Link> {
  const res = await callApi(stack, app, 'POST', '/links', {
    alias: `journey-${randomBytes(4).toString('hex')}`,
    ...fields,
  });
  if (res.status !== 201) throw new Error(`link not created: ${res.status} ${res.text}`);
  return linkOf(res);
}

/** Follows a link as a phone (or a crawler) does: the request goes to the app's link host. */
export function followLink(
  stack: Stack,
  app: StackApp,
  target: string,
  options: { method?: string; userAgent?: string } = {},
) {
  return sendRequest(`${stack.redirect.url}/${target}`, {
    method: options.method ?? 'GET',
    host: app.linkHost,
    headers: options.userAgent ? { 'user-agent': options.userAgent } : {},
  });
}

/**
 * The `fetch` of the app-sdk and of @linkservice/client, on the tests' one HTTP client (no keep-alive: a stopped stack leaves no
 * pooled socket behind). Its own timeout stands in for the abort signal.
 */
export const testFetch: FetchLike = async (url, init) => {
  // Through sendApiRequest: what the clients receive is checked against the API document too.
  const res = await sendApiRequest(url, {
    method: init.method,
    headers: init.headers,
    ...(init.body !== undefined && { rawBody: init.body }),
  });
  return { status: res.status, headers: res.headers, text: () => Promise.resolve(res.text) };
};
