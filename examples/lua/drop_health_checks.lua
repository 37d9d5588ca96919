-- Drops the noise of health probes: returning nil drops the record.
local probes = { ["/healthz"] = true, ["/readyz"] = true, ["/livez"] = true }

function process(r)
  if probes[r.path] or (r.user_agent or ""):find("^kube%-probe/") then
    return nil
  end
  return r
end
