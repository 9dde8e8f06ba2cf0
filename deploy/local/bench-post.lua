-- wrk script for deploy/local/bench ingest: POSTs {"signedPayload":"<h>.<p>.<s>"} bodies of about
-- 4 KB (a real notification's size), each distinct so every one is a new record.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local pad = string.rep("A", 3800)
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.' .. n .. pad .. '.c2lnbmF0dXJl"}')
end
