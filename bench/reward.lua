-- reward.lua: one reward per request, each for a different, fresh
-- assignment. bench/load pre-creates assignments 1..N in a new experiment
-- (seqs are consecutive there), so the ids are TOKEN-1 … TOKEN-N; thread t
-- of T takes seqs t+1, t+1+T, t+1+2T, … Arguments: TOKEN N T.
-- Past N the ids are unknown and answer 404, which shows up in the
-- non-2xx count: the driver sizes N so that this does not happen.
local next_tid = 0
function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
end

function init(args)
   token = args[1]
   limit = tonumber(args[2])
   nthreads = tonumber(args[3])
   k = 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   local seq = tid + 1 + k * nthreads
   k = k + 1
   -- Bernoulli-like outcomes: arms differ only through the policy's picks.
   local r = (seq * 2654435761) % 7 < 3 and 1 or 0
   return wrk.format(nil, nil, nil,
      string.format('{"assignment_id":"%s-%d","reward":%d}', token, seq, r))
end
