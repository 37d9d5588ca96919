-- Splits a record carrying a list of items into one record per item:
-- returning a list of tables emits each of them.
function process(r)
  if type(r.items) ~= "table" then
    return r
  end
  local out = {}
  for i, item in ipairs(r.items) do
    out[i] = { batch = r.batch, index = i, host = r.host, item = item }
  end
  return out -- an empty list drops the record
end
