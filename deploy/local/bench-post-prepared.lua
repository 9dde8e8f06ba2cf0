-- wrk script for the unpaced phase of deploy/local/bench e2e: posts, once each and in order, the
-- requests the simulated Apple prepared (POST /sim/lifecycle/prepare: one a line, the path, a
-- space, the JSON body), read from BENCH_REQUESTS_FILE. Each connection asks for its next slot in
-- delay(), which wrk calls before every request; once every line has been claimed the connections
-- wait (for hours) rather than stop, so no request already sent is cut off. The driver stops wrk
-- when the pipeline has committed them all.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local paths, bodies = {}, {}
local claimed, sent = 0, 0

init = function(args)
  local file = assert(io.open(assert(os.getenv("BENCH_REQUESTS_FILE"), "BENCH_REQUESTS_FILE is not set"), "r"))
  for line in file:lines() do
    local path, body = line:match("^(%S+) (.+)$")
    if path then
      paths[#paths + 1] = path
      bodies[#bodies + 1] = body
    end
  end
  file:close()
end

delay = function()
  claimed = claimed + 1
  if claimed <= #bodies then return 0 end
  return 24 * 3600 * 1000
end

request = function()
  -- wrk calls request() once before any connection, to check the script: that call sends nothing.
  if claimed == 0 then return wrk.format(nil, paths[1], nil, bodies[1]) end
  sent = sent + 1
  if sent > #bodies then sent = #bodies end  -- (only after a reconnect: the last body again, a duplicate)
  return wrk.format(nil, paths[sent], nil, bodies[sent])
end
