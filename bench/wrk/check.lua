-- wrk script: POST /v1/check for event url_shorten, features drawn at random from the client
-- addresses of the real Apache log given after "--". Prints one JSON line of results at the end.
--   wrk -t2 -c64 -d10s --latency -s bench/wrk/check.lua http://127.0.0.1:8080 -- LOG
-- Each request is formatted once, in init: request() only draws one at random, so wrk spends its
-- CPU on the connections rather than on building strings (the same for every server it drives).
local requests = {}

function init(args)
  local headers = {["Content-Type"] = "application/json"}
  for line in io.lines(args[1]) do
    local address = line:match("^(%S+)")
    if address then
      requests[#requests + 1] = wrk.format("POST", "/v1/check", headers,
                                           '{"event":"url_shorten","feature":"' .. address .. '"}')
    end
  end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
end

function request()
  return requests[math.random(#requests)]
end

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p99_us":%d,"non_2xx":%d,' ..
    '"socket_errors":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
