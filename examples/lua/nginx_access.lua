-- Parses an nginx "combined" access line (in message) into fields.
-- 127.0.0.1 - alice [10/Oct/2026:13:55:36 +0000] "GET /a?b=1 HTTP/1.1" 200 2326 "-" "curl/8.1"
local combined = '^(%S+) %S+ (%S+) %[([^%]]+)%] "(%S+) (%S+) ([^"]*)" (%d+) (%d+) "([^"]*)" "([^"]*)"'

function process(r)
  local client, user, time, method, path, protocol, status, bytes, referer, agent =
    string.match(r.message or "", combined)
  if not client then
    r.parse_error = "not an nginx combined access line"
    return r
  end
  r.client, r.time_local = client, time
  r.user = user ~= "-" and user or nil
  r.method, r.path, r.protocol = method, path, protocol
  r.status, r.bytes = math.tointeger(tonumber(status)), math.tointeger(tonumber(bytes))
  r.referer = referer ~= "-" and referer or nil
  r.user_agent = agent
  r.message = nil
  return r
end
