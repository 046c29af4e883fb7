-- Rotates over prepared requests (one per account) and, when BENCH_COUNT_STATUSES=1, counts
-- responses by status (that makes wrk parse every response, which costs it CPU: the baseline,
-- where wrk itself may be the limit, runs without it and reports wrk's own non-2xx count).
-- Arguments (after `--`): the requests file, the HTTP method.
-- Each line of the file: path TAB headers TAB body, headers as "Name: value" joined by \30.
-- "{{IDEM}}" in a header value or the body becomes a fresh idempotency key on every request:
-- thread id, counter and a random number, so no two requests of a run share one.

local entries = {}
local count = 0
local counter = 0
local method = "GET"
statuses = {}

local threads = {}
local next_id = 1

function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  method = args[2] or "GET"
  for line in io.lines(args[1]) do
    local path, header_text, body = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
    local headers = {}
    for pair in string.gmatch(header_text, "[^\30]+") do
      local name, value = pair:match("^([^:]+):%s*(.*)$")
      headers[name] = value
    end
    if body == "" then body = nil end
    count = count + 1
    local templated = line:find("{{IDEM}}", 1, true) ~= nil
    entries[count] = {
      path = path,
      headers = headers,
      body = body,
      templated = templated,
      raw = (not templated) and wrk.format(method, path, headers, body) or nil
    }
  end
  math.randomseed(os.time() + (tid or 0) * 7919)
end

function request()
  counter = counter + 1
  local entry = entries[(counter % count) + 1]
  if entry.raw then return entry.raw end
  local idem = string.format("wrk-%d-%d-%09d", tid or 0, counter, math.random(1, 1000000000))
  local headers = {}
  for name, value in pairs(entry.headers) do
    headers[name] = (value:gsub("{{IDEM}}", idem))
  end
  local body = entry.body and (entry.body:gsub("{{IDEM}}", idem)) or nil
  return wrk.format(method, entry.path, headers, body)
end

if os.getenv("BENCH_COUNT_STATUSES") == "1" then
  function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
  end
end

function done(summary, latency, requests)
  local merged = {}
  for _, thread in ipairs(threads) do
    local counts = thread:get("statuses")
    if counts then
      for status, n in pairs(counts) do merged[status] = (merged[status] or 0) + n end
    end
  end
  local e = summary.errors
  local parts = {}
  for status, n in pairs(merged) do parts[#parts + 1] = string.format('"%d":%d', status, n) end
  if #parts == 0 then
    parts = { string.format('"2xx":%d,"400+":%d', summary.requests - e.status, e.status) }
  end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d},"statuses":{%s}}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    table.concat(parts, ",")))
end
