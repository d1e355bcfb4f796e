-- The health monitor's incident rule: one recorded check of one host, atomically (src/store/incidents.ts).
-- A pure TypeScript twin of it (src/store/incident-rule.ts) is held to the same answers by a property test
-- against a real redis-server (test/store/incident-rule.property.test.ts).
--
-- KEYS[1] the host's hash, KEYS[2] the fleet's lateness histogram.
-- ARGV: outcome (pass|fail), now (ms), detail, failureThreshold, recoveryThreshold, claimTimeoutMs, how late
-- the check started (ms, '' when unknown) and its bucket's bound.
-- Returns { kind, count, incSince, incFirst, incLast, incAlertTs, incModel, passSince }.
local k = KEYS[1]
local outcome, now, detail = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local n, m, claimMs = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('hset', k, 'lastCheck', now, 'lastResult', outcome, 'lastDetail', detail)
if ARGV[7] ~= '' then
  local late, lk = tonumber(ARGV[7]), KEYS[2]
  redis.call('hincrby', lk, 'le:' .. ARGV[8], 1)
  redis.call('hincrby', lk, 'count', 1)
  redis.call('hincrby', lk, 'sumMs', late)
  if late > tonumber(redis.call('hget', lk, 'maxMs') or '-1') then redis.call('hset', lk, 'maxMs', late) end
end
local open = redis.call('hexists', k, 'incSince') == 1
local function incident(kind, count)
  local v = redis.call('hmget', k, 'incSince', 'incFirst', 'incLast', 'incAlertTs', 'incModel', 'passSince')
  return {kind, tostring(count), v[1] or '', v[2] or '', v[3] or '', v[4] or '', v[5] or '', v[6] or ''}
end
if outcome == 'fail' then
  local f = redis.call('hincrby', k, 'failures', 1)
  redis.call('hset', k, 'passes', 0)
  if f == 1 then redis.call('hset', k, 'streakSince', now, 'streakFirst', detail) end
  if open then
    redis.call('hset', k, 'incLast', detail)
    local posted = redis.call('hexists', k, 'incAlertTs') == 1
    local claimed = tonumber(redis.call('hget', k, 'incClaimedAt') or '0')
    if (not posted) and now - claimed >= claimMs then
      redis.call('hset', k, 'incClaimedAt', now)
      return incident('alert', f)
    end
    return incident('still-down', f)
  end
  if f >= n then
    local s = redis.call('hmget', k, 'streakSince', 'streakFirst')
    redis.call('hset', k, 'incSince', s[1] or now, 'incFirst', s[2] or detail, 'incLast', detail, 'incClaimedAt', now)
    return incident('alert', f)
  end
  return {'failing', tostring(f)}
end
local p = redis.call('hincrby', k, 'passes', 1)
if p == 1 then redis.call('hset', k, 'passSince', now) end
redis.call('hset', k, 'failures', 0)
redis.call('hdel', k, 'streakSince', 'streakFirst')
if not open then return {'healthy', tostring(p)} end
if p >= m then
  local closed = incident('recovered', p)
  redis.call('hdel', k, 'incSince', 'incFirst', 'incLast', 'incAlertTs', 'incClaimedAt', 'incModel')
  return closed
end
return incident('recovering', p)
