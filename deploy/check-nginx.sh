#!/bin/sh
# check-nginx.sh — tries deploy/nginx.conf for real: three banditd daemons on
# loopback ports, nginx (Debian's nginx-light is enough) with the example's
# server blocks rewritten to those ports and a throwaway certificate, then:
# creations with X-Experiment-Id land on a shard, every later request on an
# experiment reaches the shard that holds it, a creation without the header
# is 400, the list is 501, health answers, and the experiments are spread
# over the shards. Not part of `make test` (nginx is not a dependency);
# run it after editing deploy/nginx.conf:
#
#   make && deploy/check-nginx.sh        # BANDITD_BIN=... to pick a binary
set -eu
cd "$(dirname "$0")/.."
BIN=${BANDITD_BIN:-build/banditd}
command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install nginx-light)"; exit 2; }
command -v openssl >/dev/null || { echo "openssl is not installed"; exit 2; }
T=$(mktemp -d /tmp/check-nginx.XXXXXX)
PIDS=""
cleanup() {
    [ -f "$T/nginx.pid" ] && nginx -c "$T/nginx.conf" -s stop 2>/dev/null || true
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=127.0.0.1 -keyout "$T/privkey.pem" -out "$T/fullchain.pem" >/dev/null 2>&1
BASE=$((20000 + $$ % 20000))
for i in 1 2 3; do
    "$BIN" --listen 127.0.0.1:$((BASE + i)) --db "$T/shard$i.db" >/dev/null 2>"$T/shard$i.log" &
    PIDS="$PIDS $!"
done
sed -e "s|/etc/ssl/banditd|$T|" \
    -e "s|10\.0\.0\.11:8080|127.0.0.1:$((BASE + 1))|g" \
    -e "s|10\.0\.0\.12:8080|127.0.0.1:$((BASE + 2))|g" \
    -e "s|10\.0\.0\.13:8080|127.0.0.1:$((BASE + 3))|g" \
    -e "s|listen 80;|listen $((BASE + 4));|" -e "s|listen \[::\]:80;||" \
    -e "s|listen 443 ssl http2;|listen $((BASE + 5)) ssl http2;|" -e "s|listen \[::\]:443 ssl http2;||" \
    deploy/nginx.conf >"$T/banditd.conf"
cat >"$T/nginx.conf" <<EOF
worker_processes 1;
pid $T/nginx.pid;
error_log $T/error.log;
events { worker_connections 64; }
http {
    access_log $T/access.log;
    client_body_temp_path $T/body;
    proxy_temp_path $T/proxy;
    include $T/banditd.conf;
}
EOF
nginx -t -c "$T/nginx.conf" 2>&1 | tail -1
sleep 1
nginx -c "$T/nginx.conf"
sleep 0.3
U="https://127.0.0.1:$((BASE + 5))"
code() { curl -sk -o /dev/null -w '%{http_code}' "$@"; }
fail=0
expect() { # want got what
    if [ "$1" = "$2" ]; then echo "ok - $3"; else echo "not ok - $3 (got $2, want $1)"; fail=1; fi
}
for e in alpha beta gamma delta epsilon zeta eta theta; do
    expect 201 "$(code -H "X-Experiment-Id: $e" -H 'Content-Type: application/json' \
        -d "{\"id\":\"$e\",\"arms\":[\"a\",\"b\"]}" "$U/v1/experiments")" "create $e"
done
for e in alpha beta gamma delta epsilon zeta eta theta; do
    expect 201 "$(code -H 'Content-Type: application/json' -d '{}' "$U/v1/experiments/$e/assignments")" \
        "assignment on $e reaches its shard"
    expect 200 "$(code "$U/v1/experiments/$e/status")" "status of $e"
done
expect 400 "$(code -H 'Content-Type: application/json' -d '{"arms":["a","b"]}' "$U/v1/experiments")" \
    "create without X-Experiment-Id"
expect 501 "$(code "$U/v1/experiments")" "list spans shards"
expect 200 "$(code "$U/healthz")" "healthz"
expect 308 "$(code "http://127.0.0.1:$((BASE + 4))/healthz")" "plain HTTP redirects"
used=0
for n in 0 1 2; do
    c=$(curl -sk "$U/shard/$n/v1/experiments" | grep -o '"id":"[a-z]*"' | wc -l)
    echo "# shard $n holds $c experiments"
    [ "$c" -gt 0 ] && used=$((used + 1))
done
expect 1 "$([ "$used" -ge 2 ] && echo 1 || echo 0)" "experiments spread over several shards"
exit $fail
