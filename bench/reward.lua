-- reward.lua: one reward per request, each for a different, fresh
-- assignment. bench/load pre-creates assignments 1..N in a new experiment
-- (seqs are consecutive there), so their ids are TOKEN-1 … TOKEN-N. Each
-- run takes its own range starting after START; thread t of T takes the
-- CHUNK seqs START + t·CHUNK + 1 … START + (t+1)·CHUNK.
-- Arguments: TOKEN START CHUNK T. Past its chunk a thread sends id TOKEN-0,
-- which is no assignment and answers 404: it shows in the non-2xx count
-- (the driver sizes the chunks so that this does not happen).
local next_tid = 0
function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
end

function init(args)
   token = args[1]
   start = tonumber(args[2])
   chunk = tonumber(args[3])
   nthreads = tonumber(args[4])
   k = 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   local seq = 0
   if k < chunk then
      seq = start + tid * chunk + k + 1
   end
   k = k + 1
   -- Bernoulli-like outcomes: arms differ only through the policy's picks.
   local r = (seq * 2654435761) % 7 < 3 and 1 or 0
   return wrk.format(nil, nil, nil,
      string.format('{"assignment_id":"%s-%d","reward":%d}', token, seq, r))
end
