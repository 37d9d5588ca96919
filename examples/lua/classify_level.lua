-- Sets level from an HTTP status, for processor:route to send errors one
-- way and everything else another.
function process(r)
  local status = tonumber(r.status) or 0
  if status >= 500 then
    r.level = "error"
  elseif status >= 400 then
    r.level = "warn"
  else
    r.level = "info"
  end
  return r
end
