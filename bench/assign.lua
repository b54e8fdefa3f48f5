-- assign.lua: POST /v1/experiments/{id}/assignments with an empty object
-- (the policy chooses the bandit and the arm). Used by bench/load.
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
