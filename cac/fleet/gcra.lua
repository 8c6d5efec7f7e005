-- One lease from a fleet-scope limit: a GCRA whose theoretical arrival time
-- (TAT) lives in Redis, so that every box of the fleet draws on one bucket.
-- The Go twin is GCRA.Grant in gcra.go: the two must do the same arithmetic.
--
-- KEYS[1]  the limit's TAT key, microseconds of Redis's clock
-- KEYS[2]  the fleet's members sorted set, box -> last renewal (microseconds)
-- ARGV[1]  interval, microseconds a token is worth (1e6 / cps)
-- ARGV[2]  tolerance, microseconds the TAT may run ahead ((burst - 1) * interval)
-- ARGV[3]  want, tokens asked for (>= 1)
-- ARGV[4]  box name
-- ARGV[5]  member staleness, microseconds
-- ARGV[6]  back, tokens of this box's leases that expired unspent (>= 0);
--          want may be 0 when back is not
--
-- Returns {granted, members, now, TAT after, given back}, all in integers.
--
-- Giving back moves the TAT back by back intervals, never behind now: the
-- box took the tokens out of its lease first, so no call can spend them,
-- and TAT - granted x interval never falls, which is what bounds the fleet
-- to rate x elapsed + burst. A token back past a full bucket is lost, as
-- an unspent token of a full bucket is.
--
-- Lua numbers are doubles: every value is kept in whole microseconds, about
-- 1.8e15 today, so that sums and products stay exact below 2^53.

-- Redis before 5 replicates scripts verbatim, and TIME before a write would
-- then be refused; later versions replicate effects and ignore this.
if redis.replicate_commands then
	redis.replicate_commands()
end

local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local box = ARGV[4]
local staleness = tonumber(ARGV[5])
local back = tonumber(ARGV[6] or '0')
if not interval or interval < 1 or not tolerance or tolerance < 0 or not want or want < 0
	or not back or back < 0 or (want < 1 and back < 1)
	or not staleness or staleness < 1 or not box or box == '' then
	return redis.error_reply('xdpcac gcra: bad arguments')
end

-- Redis's clock, never the box's: the boxes' clocks may be skewed, and the
-- bound (rate x elapsed + burst) holds only when one clock measures elapsed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- An absent key is a full bucket: the TAT is in the past.
local tat = tonumber(redis.call('GET', KEYS[1])) or 0
local returned = 0
if back > 0 and tat > now then
	returned = math.floor((tat - now) / interval)
	if returned * interval > tat - now then
		returned = returned - 1
	end
	if returned > back then
		returned = back
	end
	tat = tat - returned * interval
end
local base = tat
if now > base then
	base = now
end

-- Tokens that conform: base + k * interval may run at most tolerance ahead
-- of now. The quotient is corrected in integers, so that a rounded double
-- never grants a token too many.
local room = now + tolerance + interval - base
local k = 0
if room >= interval then
	k = math.floor(room / interval)
	if k * interval > room then
		k = k - 1
	elseif (k + 1) * interval <= room then
		k = k + 1
	end
	if k > want then
		k = want
	end
end

if k > 0 or returned > 0 then
	tat = base + k * interval
	-- The key outlives its TAT by a second and then goes: by then the
	-- bucket is full again, which an absent key says as well.
	local ttl = math.floor((tat - now) / 1000) + 1000
	redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', string.format('%d', ttl))
end

-- The box renews its membership with every lease; boxes silent for longer
-- than the staleness are no longer counted.
redis.call('ZADD', KEYS[2], string.format('%d', now), box)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('(%d', now - staleness))
redis.call('PEXPIRE', KEYS[2], string.format('%d', math.floor(staleness / 1000) + 1000))
local members = redis.call('ZCARD', KEYS[2])

return {k, members, now, tat, returned}
