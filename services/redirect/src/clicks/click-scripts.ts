import { LOOKUP_ENTRY_LUA, PENDING_SUFFIX, REDIRECTING_LINK_ID_LUA } from '@linkservice/link-cache';

/**
 * The counting rule, the one place it is written: a click is counted in the pending hash only
 * when its click token's key was set, and the key is set only if it does not exist (NX), to the
 * token's record `<linkId> <at>` (`clickTokenValue`) with `ttlMs` to live. The token is the
 * click's idempotency key: any second execution of a click's count (ioredis resending a call
 * after a reconnect, a timed-out call a frozen Redis runs when it resumes, a reconciliation)
 * finds the key and counts nothing, and so does a click counted after its token was used up
 * (the key is then a tombstone, `ClickTokenStore.forget`). Returns 1 when it counted, 0 when the
 * key was there. Every script that counts clicks is composed with it.
 *
 * With the click, and under the same rule, its analytics: `dimensions` (the field suffix of
 * click-analytics.ts, '' for none) counted in the same pending hash under `<linkId><dimensions>`,
 * so a batch always holds a link's clicks and their dimensions together, and `visitor` ('' for
 * none) added to the HyperLogLog of the link's visitors on the click's UTC day, which expires at
 * the end of the next day (set once: a PFADD that changed nothing cannot be the key's first).
 * That key is the pending hash's shard space + `visitors:<day>:<linkId>` (`visitorsKeyPrefix`):
 * made here from the pending key and the click time, so each lookup sends no more arguments
 * for it. A visitor new to that day also sets `<linkId>␟<day>` (`visitorsField`) in the pending
 * hash: the flusher reads the day's count for the link only then.
 */
export const COUNT_CLICK_LUA = `
local DAY_MS = 86400000
local function countClick(pendingKey, tokenKey, linkId, at, ttlMs, dimensions, visitor)
  if redis.call('SET', tokenKey, linkId .. ' ' .. at, 'PX', ttlMs, 'NX') then
    redis.call('HINCRBY', pendingKey, linkId, 1)
    if dimensions ~= '' then
      redis.call('HINCRBY', pendingKey, linkId .. dimensions, 1)
    end
    if visitor ~= '' then
      local day = math.floor(tonumber(at) / DAY_MS)
      local visitors = string.sub(pendingKey, 1, -${PENDING_SUFFIX.length + 1}) .. 'visitors:' ..
        string.format('%d', day) .. ':' .. linkId
      if redis.call('PFADD', visitors, visitor) == 1 then
        redis.call('PEXPIREAT', visitors, string.format('%d', (day + 2) * DAY_MS), 'NX')
        redis.call('HSET', pendingKey, linkId .. '\\31' .. string.format('%d', day), 1)
      end
    end
    return 1
  end
  return 0
end`;

/**
 * The redirect's lookups of one event-loop turn, in one call: per lookup the cache entry and the
 * generation a fill needs (`LOOKUP_ENTRY_LUA`), and, when it carries a click time, the click of
 * a link that redirects at that time (`REDIRECTING_LINK_ID_LUA`, the rule the service decides
 * its 410 with) counted with its token (`countClick`).
 *
 * KEYS: (entry, generation, host generation, token key, pending hash) per lookup, all of one
 * shard on a cluster (link-host-keys.ts; a lookup without a click has its entry key in the
 * token's place; it is not touched). ARGV: the tokens' TTL (ms), then per lookup the click time
 * (empty: count nothing), its dimensions and visitor (see countClick). Replies (entry,
 * generation, counted) per lookup; counted is 1 also
 * when the token's key was there already (an earlier execution counted the click, or its token
 * was used up since): the caller must not count it again either way. `false` becomes a nil
 * reply (a nil in a Lua table would end it).
 */
export const LOOKUP_COUNTING_CLICK = `${LOOKUP_ENTRY_LUA}${REDIRECTING_LINK_ID_LUA}${COUNT_CLICK_LUA}
local replies = {}
local tokenTtl = ARGV[1]
for i = 1, #KEYS / 5 do
  local a = (i - 1) * 3 + 1
  local at = ARGV[a + 1]
  local k = (i - 1) * 5
  local entry, generation = lookUpEntry(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3])
  local counted = 0
  if entry and at ~= '' then
    local linkId = redirectingLinkId(entry, at)
    if linkId then
      countClick(KEYS[k + 5], KEYS[k + 4], linkId, at, tokenTtl, ARGV[a + 2], ARGV[a + 3])
      counted = 1
    end
  end
  replies[i * 3 - 2] = entry
  replies[i * 3 - 1] = generation
  replies[i * 3] = counted
end
return replies`;

/**
 * Counts clicks no lookup counted (a miss, a reconciliation), each with `countClick`. Skips a
 * click that could double-count after its token expired: one counted once its token (had an
 * earlier execution stored it) may have expired, that is at or after `at + ttl - margin` by
 * Redis' clock, counts nothing and answers -1 for it. `margin` covers the clock difference
 * between this service and Redis. A click's token lives what is left of its TTL.
 *
 * KEYS: (pending hash, token key) per click, of one shard on a cluster. ARGV: the token TTL
 * (ms), the margin (ms), then per click (link id, click time ms, dimensions, visitor) as
 * countClick takes them. Replies per click: 1 counted, 0 counted before (or a tombstone), -1
 * too late.
 */
export const COUNT_CLICKS = `${COUNT_CLICK_LUA}
redis.replicate_commands()
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tokenTtl, margin = tonumber(ARGV[1]), tonumber(ARGV[2])
local replies = {}
for i = 1, #KEYS / 2 do
  local a = (i - 1) * 4 + 3
  local linkId, at = ARGV[a], ARGV[a + 1]
  local left = tonumber(at) + tokenTtl - now
  if left <= margin then
    replies[i] = -1
  else
    replies[i] = countClick(KEYS[i * 2 - 1], KEYS[i * 2], linkId, at, left, ARGV[a + 2],
      ARGV[a + 3])
  end
end
return replies`;
