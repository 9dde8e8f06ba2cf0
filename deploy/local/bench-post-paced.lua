-- wrk script for the fixed-rate part of deploy/local/bench ingest: like bench-post.lua, but each
-- connection waits an exponentially distributed pause (mean BENCH_PACE_MS) before each request,
-- so that CONNECTIONS connections offer about CONNECTIONS * 1000 / BENCH_PACE_MS requests/s as
-- independent (Poisson) arrivals. wrk reports each request's own latency.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local pad = string.rep("A", 3800)
local mean = tonumber(os.getenv("BENCH_PACE_MS") or "64")
local n = 0
init = function(args) math.randomseed(os.time()) end
delay = function() return -math.log(1 - math.random()) * mean end
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.' .. n .. pad .. '.c2lnbmF0dXJl"}')
end
