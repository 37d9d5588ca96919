-- Splits a record carrying a list of items into one record per item:
-- returning a list of tables emits each of them, each keeping when the
-- batch was observed.
function process(r)
  if type(r.items) ~= "table" then
    return r
  end
  local out = {}
  for i, item in ipairs(r.items) do
    out[i] = { batch = r.batch, index = i, host = r.host, item = item,
               observed_time_unix_nano = r.observed_time_unix_nano }
  end
  return out -- an empty list drops the record
end
