-- observe.lua: POST observations cycling over the arms a, b, c with 0/1
-- outcomes. Used by bench/load.
local arms = {"a", "b", "c"}
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function request()
   n = n + 1
   local r = (n * 2654435761) % 5 < 2 and 1 or 0
   return wrk.format(nil, nil, nil,
      string.format('{"arm":"%s","reward":%d}', arms[n % 3 + 1], r))
end
