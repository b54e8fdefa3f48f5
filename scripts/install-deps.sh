#!/bin/sh
# Installs the Debian packages banditd needs to build and test, only when one
# is missing (so `make run` stays fast on a prepared machine). Run as root.
set -eu
# libgnutls28-dev: SHA-256 of API keys, HMAC of webhooks (and MHD's HTTPS,
# which links it); libcurl4-openssl-dev: the webhooks' deliveries (notify/)
# and the tests' HTTP client;
# openssl: the TLS test makes a self-signed certificate with it;
# python3-jsonschema: tests/http/test_openapi_responses.py;
# libpq-dev: the PostgreSQL store (store/postgres.c); postgresql: the tests
# start a real server of their own (tests/support/tpg.c; the package's
# system service is not used); haproxy: the cluster test runs
# deploy/haproxy.cfg in front of three daemons (tests/http/test_cluster.c).
PKGS="libmicrohttpd-dev libgnutls28-dev libjansson-dev libsqlite3-dev libpq-dev libgsl-dev libcmocka-dev \
libcurl4-openssl-dev pkg-config gcc make curl"
[ "${1:-}" = "--test" ] && PKGS="$PKGS gnuplot-nox openssl python3-jsonschema python3 postgresql haproxy"
# make bench: wrk drives the HTTP benchmarks (bench/load.c)
[ "${1:-}" = "--bench" ] && PKGS="$PKGS wrk"
# make reproduce: the driver (Python 3, standard library) and its plots.
[ "${1:-}" = "--repro" ] && PKGS="$PKGS gnuplot-nox python3 fonts-dejavu-core"
missing=""
# The browser suites (tests/web: the dashboard, and the JavaScript client in a
# page of another origin) need a real browser: Debian's chromium and
# chromium-driver, fonts with the page's glyphs (δᶜ, ρ̄), and Node.js with
# npm (below) to drive it.
[ "${1:-}" = "--test" ] && PKGS="$PKGS chromium chromium-driver fonts-dejavu-core fonts-liberation"
# make format, format-check and lint: the analysers (clang-tidy also needs
# the headers above, as it compiles every file with the build's flags).
[ "${1:-}" = "--lint" ] && PKGS="$PKGS clang-format clang-tidy cppcheck"
# make coverage: gcovr reads gcc's gcov data (line and branch coverage, HTML);
# python3 sums its JSON summary per directory (scripts/coverage_summary.py).
[ "${1:-}" = "--coverage" ] && PKGS="$PKGS gcovr python3"
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js may come from elsewhere than Debian (a nodesource build bundles
# npm): only a missing command asks for Debian's packages.
if [ "${1:-}" = "--test" ]; then
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
fi
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing:$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
