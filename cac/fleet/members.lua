-- The boxes of a fleet that renewed a lease within the staleness, newest
-- first, as a flat list of box, last renewal (microseconds).
--
-- KEYS[1]  the fleet's members sorted set
-- ARGV[1]  member staleness, microseconds
--
-- A script rather than TIME and ZREVRANGEBYSCORE from the client: the cutoff
-- is then taken on the clock of the node that holds the set, the clock the
-- scores were written with.
local staleness = tonumber(ARGV[1])
if not staleness or staleness < 1 then
	return redis.error_reply('xdpcac members: bad arguments')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
return redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', string.format('%d', now - staleness), 'WITHSCORES')
