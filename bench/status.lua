-- status.lua: GET /v1/experiments/{id}/status without If-None-Match (every
-- answer is computed). Used by bench/load.
wrk.method = "GET"
