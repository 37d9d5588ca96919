-- Replaces every e-mail address in message with <redacted>, and counts them.
function process(r)
  if type(r.message) == "string" then
    local redacted, n = r.message:gsub("[%w.%%+_-]+@[%w.-]+%.%a%a+", "<redacted>")
    r.message = redacted
    if n > 0 then r.redacted = n end
  end
  return r
end
