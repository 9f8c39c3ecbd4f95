import { randomUUID } from 'node:crypto';

/** Every response of every service carries it (decisions.md, "Errors beyond the spec's table"). */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** A caller's id is echoed only when it is short and harmless in logs and headers. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The id of one request: the caller's `X-Request-Id` when it sent one sane value (so a proxy's or
 * client's id follows the request through the logs), otherwise a fresh UUID.
 */
export function requestIdFrom(offered: string | string[] | undefined): string {
  return typeof offered === 'string' && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
}
