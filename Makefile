# banditd — build, run and test.
#
#   make          build/banditd and build/bandit-sim (optimised)
#   make run      install missing packages, build, serve on 127.0.0.1:8080
#   make test     install, build, run every suite (unit, HTTP, statistical)
#   make bench    benchmarks (bench/)
#   make web-dist rebuild the dashboard's committed files (web/dist) with npm
#   make tsan     ThreadSanitizer: the unit suites that start threads and every
#                 HTTP suite against a TSan daemon (build/tsan); a few minutes
#   make valgrind memcheck (--error-exitcode=1 --leak-check=full) on every unit
#                 suite and on the daemon during a short HTTP scenario
#                 (lifecycle, faults, shutdown); several minutes
#   make lint     format-check, cppcheck and clang-tidy (make format rewrites)
#   make test-crash  the slow fault suites: kill -9, power cuts, I/O and
#                 allocation faults at every call, interleavings, raw fuzzing
#   make coverage line and branch coverage per directory (gcovr; HTML report)
# tsan, valgrind, test-crash and coverage are not part of `make test` (too slow); each exits
# non-zero on any report, error or leak.
#
# One section per concern below: toolchain, layers (one static library per
# directory), generated sources, programs, the README's two commands,
# test variants, benchmarks, lint, generated documentation.

# --- toolchain ------------------------------------------------------------------
#
# Objects go to $(BUILD)/obj; the sanitizer build (ASan + UBSan) used by the
# tests lives in build/asan and is made by calling this Makefile again with
# BUILD=build/asan SAN=1 (build/tsan likewise with TSAN=1: ThreadSanitizer
# cannot be combined with ASan; build/fuzz with FUZZ=1 and clang).

BUILD ?= build
SAN ?= 0
FUZZ ?= 0
TSAN ?= 0
CC ?= gcc

PKGS := libmicrohttpd jansson sqlite3 libpq gsl libcurl gnutls
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wcast-qual -Wformat=2 -Wvla
CFLAGS ?= -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(WARN) -I. $(PKG_CFLAGS) -MMD -MP -pthread
LDFLAGS += -pthread
LDLIBS += $(PKG_LIBS) -lm

ifeq ($(FUZZ),1)
# libFuzzer build (make fuzz): clang, coverage instrumentation everywhere
CFLAGS += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
          -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SAN),1)
CFLAGS += -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
else ifeq ($(TSAN),1)
CFLAGS += -O1 -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
else
CFLAGS += -O2
endif

OBJ := $(BUILD)/obj
objs = $(patsubst %.c,$(OBJ)/%.o,$(1))

# Quiet by default; `make V=1` shows the commands.
Q := $(if $(V),,@)

# Keep objects of test binaries between runs (make deletes intermediates otherwise).
.SECONDARY:

.PHONY: all run test test-build deps test-deps format format-check lint bench bench-deps clean \
        valgrind tsan reproduce test-crash fuzz web-dist

all: $(BUILD)/banditd $(BUILD)/bandit-sim

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/lib%.a:
	@mkdir -p $(dir $@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# --- layers: one static library per directory -------------------------------------
#
#   server/ → api/ → http/
#                  → exp/ → store/ → base/
#                         → policies/ → base/
#                  → notify/ → store/
#   sim/ → policies/
#   bandit-sim (sim/main.c, cli.c, cli_oc.c) → exp/ (the create body's parser
#                                         and the design hash), sim/
#
# Libraries are linked top layer first, so a call from a lower layer up into
# a higher one is an undefined reference: the linker refuses a back edge.
# Sources are found by wildcard: a new policy is one new file in policies/
# (plus its registry line), nothing to add here.

LIB_BASE := $(BUILD)/libbase.a
LIB_POLICIES := $(BUILD)/libpolicies.a
LIB_STORE := $(BUILD)/libstore.a
LIB_EXP := $(BUILD)/libexp.a
LIB_NOTIFY := $(BUILD)/libnotify.a
LIB_HTTP := $(BUILD)/libhttp.a
LIB_API := $(BUILD)/libapi.a
LIB_SERVER := $(BUILD)/libserver.a
LIB_SIM := $(BUILD)/libsim.a
LIB_TESTS := $(BUILD)/libtestsupport.a

$(LIB_BASE): $(call objs,$(wildcard base/*.c))
$(LIB_POLICIES): $(call objs,$(wildcard policies/*.c))
$(LIB_STORE): $(call objs,$(wildcard store/*.c))
$(LIB_EXP): $(call objs,$(wildcard exp/*.c))
$(LIB_NOTIFY): $(call objs,$(wildcard notify/*.c))
$(LIB_HTTP): $(call objs,$(wildcard http/*.c))
$(LIB_API): $(call objs,$(wildcard api/*.c)) $(OBJ)/gen/openapi.o $(OBJ)/gen/web_assets.o
$(LIB_SERVER): $(call objs,$(filter-out server/main.c,$(wildcard server/*.c)))
$(LIB_SIM): $(call objs,$(filter-out sim/main.c sim/cli.c sim/cli_oc.c,$(wildcard sim/*.c)))
$(LIB_TESTS): $(call objs,$(wildcard tests/support/*.c))

# What the daemon links, in layer order; the simulator its own two. The
# daemon links the simulator for one thing, POST /v1/plan's quick simulation
# by the same engine code (api -> sim -> policies, one way).
LIBS_DAEMON := $(LIB_SERVER) $(LIB_API) $(LIB_HTTP) $(LIB_EXP) $(LIB_NOTIFY) $(LIB_STORE) \
               $(LIB_SIM) $(LIB_POLICIES) $(LIB_BASE)
LIBS_SIM := $(LIB_SIM) $(LIB_POLICIES) $(LIB_BASE)
# bandit-sim oc reads a design with the daemon's own parser and hashes it
# with the daemon's own function: the program links exp/ (and what exp's
# objects call in store/), the simulator library does not.
LIBS_SIM_PROGRAM := $(LIB_EXP) $(LIB_STORE) $(LIBS_SIM)

# --- generated sources ----------------------------------------------------------
#
# docs/openapi.json is compiled in (served at /openapi.json): one C array,
# made with od and sed (coreutils) by scripts/embed-array.sh. The dashboard:
# web/dist (built and committed from web/src, see web/README.md) becomes a C
# table in the binary. Its generator is C, built here, so a fresh machine
# needs neither npm nor xxd. web/dist itself is a prerequisite so that a
# removed file also regenerates the table.

WEB_DIST := $(sort $(wildcard web/dist/*))
EMBED := $(BUILD)/scripts/embed

$(BUILD)/gen/openapi.c: docs/openapi.json scripts/embed-array.sh
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  EMBED   $<")
	$(Q)sh scripts/embed-array.sh api_openapi_json $< api/openapi.h > $@.tmp && mv $@.tmp $@

$(EMBED): scripts/embed.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) -std=c11 -O2 $(WARN) -o $@ $<

$(BUILD)/gen/web_assets.c: $(EMBED) $(WEB_DIST) web/dist
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  EMBED   web/dist")
	$(Q)$(EMBED) $@ $(WEB_DIST)

$(OBJ)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

# Rebuild web/dist from web/src (needs npm; `make` itself never does). Commit
# the result: the browser test fails when web/dist lags web/src.
web-dist:
	cd web && npm ci --no-audit --no-fund && npm run build

# --- programs -------------------------------------------------------------------

$(BUILD)/banditd: $(OBJ)/server/main.o $(LIBS_DAEMON)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bandit-sim: $(OBJ)/sim/main.o $(OBJ)/sim/cli.o $(OBJ)/sim/cli_oc.o $(LIBS_SIM_PROGRAM)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# T*(μ) and w*(μ) from the policies' own solver (policies/tas.h), for the
# reproduction driver's cross-check of its lower bound.
$(BUILD)/scripts/tstar: $(OBJ)/scripts/tstar.o $(LIB_POLICIES) $(LIB_BASE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each GLR threshold's samples to stop on one pair (docs/stop-rules.md,
# "Literature thresholds"): no simulation, a second.
$(BUILD)/scripts/thresholds: $(OBJ)/scripts/thresholds.o $(LIB_POLICIES) $(LIB_BASE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The proven rule's floors on issue 11's instances and the threshold cut its
# targets need (docs/stop-rules.md, "What the issue-11 targets need"): no
# simulation, well under a minute.
$(BUILD)/scripts/floors: $(OBJ)/scripts/floors.o $(LIB_POLICIES) $(LIB_BASE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# --- the README's two commands ----------------------------------------------------

deps:
	@./scripts/install-deps.sh

test-deps:
	@./scripts/install-deps.sh --test

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var
	./$(BUILD)/banditd --listen 127.0.0.1:8080 --db var/banditd.db

# --- tests ----------------------------------------------------------------------
#
# Unit and HTTP suites run under ASan + UBSan (the daemon they start is the
# sanitizer build); statistical suites run optimised (they measure rates
# over thousands of simulated runs, and share every line of policy code).
# Script suites print TAP and run against the sanitizer daemon: the OpenAPI
# response check, the dashboard in Chromium (tests/web), the client
# libraries (tests/clients: clients/python, clients/js, a page of another
# origin in Chromium), the reproduction
# driver's smoke test (tests/repro), the generated docs' freshness and the
# README's walkthrough run as written (tests/docs). tests/run.sh sums them into one "N passed, N failed" line.

UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/test_*.c))
HTTP_TESTS := $(patsubst tests/http/%.c,$(BUILD)/tests/http/%,$(wildcard tests/http/test_*.c))
STAT_TESTS := $(patsubst tests/stat/%.c,$(BUILD)/tests/stat/%,$(wildcard tests/stat/test_*.c))
SCRIPT_TESTS := $(wildcard tests/http/test_*.py) $(wildcard tests/web/test_*.sh) \
                $(wildcard tests/clients/test_*.py) $(wildcard tests/clients/test_*.sh) \
                $(wildcard tests/repro/test_*.sh) tests/docs/test_docs.sh tests/docs/test_readme.sh
# Tests may reach into every layer (and the simulator): all libraries.
LIBS_ALL := $(LIB_SERVER) $(LIB_API) $(LIB_HTTP) $(LIB_EXP) $(LIB_NOTIFY) $(LIB_SIM) \
            $(LIB_STORE) $(LIB_POLICIES) $(LIB_BASE)

$(BUILD)/tests/%: $(OBJ)/tests/%.o $(LIB_TESTS) $(LIBS_ALL)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CMOCKA_LIBS)

# replays the fuzz corpus: the target bodies link before the libraries
$(BUILD)/tests/unit/test_fuzz_corpus: $(OBJ)/tests/unit/test_fuzz_corpus.o \
		$(OBJ)/tests/fuzz/targets.o $(LIB_TESTS) $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CMOCKA_LIBS)

test-build:
	@$(MAKE) --no-print-directory all $(STAT_TESTS) $(DOCS_TOOL)
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 build/asan/banditd build/asan/bandit-sim \
		$(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS) $(HTTP_TESTS) $(SHIMS))

test: test-deps
	@$(MAKE) --no-print-directory test-build
	@BANDITD_BIN=$(CURDIR)/build/asan/banditd BANDIT_SIM_BIN=$(CURDIR)/build/bandit-sim \
		BANDITD_PLAIN_BIN=$(CURDIR)/build/banditd \
		./tests/run.sh $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS) $(HTTP_TESTS)) \
		$(SCRIPT_TESTS) $(STAT_TESTS)

# --- fault injection (issue 13: SQLite's and PostgreSQL's habits) -----------------
#
# tests/shim/*.c are LD_PRELOAD shims that tests/support/faults.c loads into
# the daemon: faultfs.so (a page cache a power cut drops, failing
# open/write/fsync/ftruncate, stalled writes) and faultmem.so (the Nth
# allocation fails). They are built without sanitizer flags (they run
# before ASan's runtime), next to the test binaries. The suites that use
# them — and the other fault suites — read their sizes from the
# environment: `make test` runs them small, `make test-crash` runs the slow
# variants below (SLOW_FAULTS), every suite with its own knob:
#   test_crash         CRASH_KILLS       kill -9 under load (3 in make test)
#   test_cluster       CLUSTER_KILLS     kill -9 of the active daemon behind HAProxy (2)
#   test_powerloss     POWERLOSS_CUTS    power cuts, --sync full and normal (2)
#   test_iofaults      IOFAULTS_ALL=1    every request kind × EIO/ENOSPC × every N,
#                                        a power cut after each fault (a sample)
#   test_allocfaults   ALLOCFAULTS_ALL=1 every request kind × every N (a sample),
#                                        against the ASan and the plain daemon
#   test_interleave    INTERLEAVE_ROUNDS scripted interleavings, each run again
#   test_rawfuzz       RAWFUZZ_N         malformed requests over a socket (300)
# and then every HTTP suite again against the plain (non-ASan) daemon.

SHIMS = $(BUILD)/tests/shim/faultfs.so $(BUILD)/tests/shim/faultmem.so

$(BUILD)/tests/shim/%.so: tests/shim/%.c tests/shim/faultctl.h
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  SHIM    $<")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -shared $(WARN) -I. -o $@ $< -ldl

CRASH_KILLS ?= 25
SLOW_FAULTS := CRASH_KILLS=$(CRASH_KILLS) CLUSTER_KILLS=50 POWERLOSS_CUTS=20 IOFAULTS_ALL=1 ALLOCFAULTS_ALL=1 \
               INTERLEAVE_ROUNDS=50 RAWFUZZ_N=5000
CRASH_SUITES := build/asan/tests/http/test_crash build/asan/tests/http/test_cluster \
                build/asan/tests/http/test_powerloss \
                build/asan/tests/http/test_iofaults build/asan/tests/http/test_allocfaults \
                build/asan/tests/unit/test_interleave build/asan/tests/http/test_rawfuzz
test-crash: test-deps
	@$(MAKE) --no-print-directory build/banditd build/bandit-sim
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 build/asan/banditd $(CRASH_SUITES) \
		$(patsubst $(BUILD)/%,build/asan/%,$(SHIMS))
	@$(SLOW_FAULTS) BANDITD_BIN=$(CURDIR)/build/asan/banditd \
		BANDITD_PLAIN_BIN=$(CURDIR)/build/banditd ./tests/run.sh $(CRASH_SUITES)
	@# Every HTTP suite once more against the optimised daemon without ASan:
	@# make test runs them against the ASan build only, which hid a crash and
	@# a lost lock that only the production build showed.
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 \
		$(patsubst $(BUILD)/%,build/asan/%,$(HTTP_TESTS))
	@BANDITD_BIN=$(CURDIR)/build/banditd BANDITD_PLAIN_BIN=$(CURDIR)/build/banditd \
		BANDIT_SIM_BIN=$(CURDIR)/build/bandit-sim \
		./tests/run.sh $(patsubst $(BUILD)/%,build/asan/%,$(HTTP_TESTS))

# --- end of fault injection ---------------------------------------------------------

# --- coverage (issue 13) -------------------------------------------------------------
#
# make coverage: an instrumented build (build/coverage: gcc --coverage at -O0,
# no sanitizer) of the daemon, the unit suites and the HTTP suites, run as
# `make test` runs them (the HTTP suites start build/coverage/banditd; a
# daemon killed with SIGKILL writes no counts, so crash tests add little);
# then gcovr (installed by scripts/install-deps.sh --coverage) reports line
# and branch coverage of COVERAGE_DIRS: a table per directory in
# build/coverage/summary.md (printed) and an HTML report in
# build/coverage/html/index.html. A failing suite is reported, and fails the
# target, after the report is written.
COVERAGE ?= 0
ifeq ($(COVERAGE),1)
CFLAGS += -O0 --coverage
LDFLAGS += --coverage
endif
COVERAGE_DIRS := server api http exp store policies base
COV := build/coverage

.PHONY: coverage
coverage:
	@./scripts/install-deps.sh --test
	@./scripts/install-deps.sh --coverage
	@$(MAKE) --no-print-directory BUILD=$(COV) COVERAGE=1 $(COV)/banditd $(COV)/bandit-sim \
		$(patsubst $(BUILD)/%,$(COV)/%,$(UNIT_TESTS) $(HTTP_TESTS) $(SHIMS))
	@find $(COV) -name '*.gcda' -delete
	@BANDITD_BIN=$(CURDIR)/$(COV)/banditd BANDIT_SIM_BIN=$(CURDIR)/$(COV)/bandit-sim \
		TEST_OUT=tests/out/coverage ./tests/run.sh \
		$(patsubst $(BUILD)/%,$(COV)/%,$(UNIT_TESTS) $(HTTP_TESTS)); echo $$? > $(COV)/tests.rc
	@mkdir -p $(COV)/html
	@gcovr --root . --object-directory $(COV)/obj $(addprefix --filter ,$(addsuffix /,$(COVERAGE_DIRS))) \
		--exclude-unreachable-branches --json-summary $(COV)/summary.json \
		--html-details $(COV)/html/index.html
	@python3 scripts/coverage_summary.py $(COV)/summary.json $(COVERAGE_DIRS) > $(COV)/summary.md
	@cat $(COV)/summary.md
	@echo "HTML report: $(COV)/html/index.html"
	@exit $$(cat $(COV)/tests.rc)

# --- end of coverage -----------------------------------------------------------------

# libFuzzer targets (clang, ASan + UBSan), FUZZ_TIME seconds each, on a
# working corpus seeded from tests/fuzz/corpus/; a crash is saved under
# build/fuzz/artifacts/ and fails the run (copy it to tests/fuzz/regress/ to
# make it a regression test of make test). Report: build/fuzz/report.md.
FUZZ_TIME ?= 60
FUZZ_TARGETS := expconfig assignment rewards corrections observations patch simproblem replay \
                etag snapshot
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz FUZZ=1 CC=clang \
		$(addprefix build/fuzz/fuzz/fuzz_,$(FUZZ_TARGETS))
	@./tests/fuzz/run.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

$(BUILD)/fuzz/fuzz_%: $(OBJ)/tests/fuzz/fuzz_%.o $(OBJ)/tests/fuzz/targets.o $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# ThreadSanitizer: the unit suites that run threads (the store's writer and
# concurrent submitters, the simulator's workers — test_sim_cli runs the
# TSan bandit-sim with 2 threads —, the runtime's writer callbacks and
# concurrent creates) and every HTTP suite, all built with -fsanitize=thread,
# the clients too. A report makes a process exit 66 (TSan's exit code), and
# tests/run.sh fails any suite whose log holds one (so a daemon killed with
# SIGKILL counts too).
TSAN_UNIT := $(patsubst %,build/tsan/tests/unit/%,test_store test_sim test_sim_cli test_experiment)
TSAN_HTTP := $(patsubst $(BUILD)/%,build/tsan/%,$(HTTP_TESTS))
TSAN_OPTIONS_RUN := halt_on_error=0 second_deadlock_stack=1 history_size=4

tsan: test-deps
	@$(MAKE) --no-print-directory BUILD=build/tsan TSAN=1 build/tsan/banditd build/tsan/bandit-sim \
		$(TSAN_UNIT) $(TSAN_HTTP)
	@TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" TEST_OUT=tests/out/tsan \
		BANDITD_BIN=$(CURDIR)/build/tsan/banditd BANDIT_SIM_BIN=$(CURDIR)/build/tsan/bandit-sim \
		./tests/run.sh $(TSAN_UNIT) $(TSAN_HTTP) $(wildcard tests/http/test_*.py)

# memcheck on the optimised build (-g; valgrind cannot run a sanitizer
# build): every unit suite under valgrind, then a short HTTP scenario whose
# daemon runs under valgrind (tests/support/valgrind-banditd.sh) — the
# harness asserts its exit status, which an error or a leak makes 1.
# Leaks counted: definitely and indirectly lost (a thread's possibly-lost
# stack at exit is not ours).
VALGRIND_OPTS_RUN := --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
                     --show-leak-kinds=definite,indirect --num-callers=30 --track-origins=yes
VALGRIND_HTTP := $(BUILD)/tests/http/test_lifecycle $(BUILD)/tests/http/test_faults \
                 $(BUILD)/tests/http/test_shutdown

valgrind: test-deps
	@$(MAKE) --no-print-directory all $(UNIT_TESTS) $(VALGRIND_HTTP)
	@VALGRIND_OPTS="$(VALGRIND_OPTS_RUN)" TEST_WRAPPER="valgrind -q" TEST_OUT=tests/out/valgrind \
		BANDIT_SIM_BIN=$(CURDIR)/$(BUILD)/bandit-sim ./tests/run.sh $(UNIT_TESTS)
	@VALGRIND_OPTS="$(VALGRIND_OPTS_RUN)" TEST_OUT=tests/out/valgrind \
		BANDITD_BIN=$(CURDIR)/tests/support/valgrind-banditd.sh \
		BANDITD_VG_BIN=$(CURDIR)/$(BUILD)/banditd ./tests/run.sh $(VALGRIND_HTTP)

clean:
	rm -rf build

# --- the seed papers' experiments -------------------------------------------------
#
# scripts/repro.py (docs/reproduction.md says what is scaled down):
# docs/reproduction.md and docs/img/*.png from build/bandit-sim, raw results
# (a cache keyed by the binary's hash) in build/repro/. Python 3 (standard
# library) and gnuplot are installed when missing. make test runs only the
# driver's smoke test (tests/repro/).

reproduce:
	@./scripts/install-deps.sh --repro
	@$(MAKE) --no-print-directory $(BUILD)/bandit-sim $(BUILD)/scripts/tstar
	python3 scripts/repro.py --sim $(BUILD)/bandit-sim --tstar $(BUILD)/scripts/tstar --out $(BUILD)/repro \
		--doc docs/reproduction.md --img docs/img $(if $(REPRO_SCALE),--scale $(REPRO_SCALE))

# --- benchmarks -------------------------------------------------------------------
#
# Every figure goes to build/bench/*.md, and together into bench/results.md
# (also printed). Timing lives here, never in tests. The HTTP run takes ~5
# minutes (84 wrk runs of BENCH_DURATION seconds), the policies ~1 minute,
# the log run (export, re-sent rewards and delete on an experiment of
# BENCH_LOG_EVENTS events) under a minute, the metrics run (a scrape of
# /metrics with 10⁴ experiments) about ten seconds, the blocks run (one
# client serving visitors from assignment blocks of 1, 10 and 100) five
# times BENCH_DURATION, the PostgreSQL runs (load pg: PostgreSQL against
# SQLite; load cluster: 1, 2 and 3 daemons on one PostgreSQL, each starting
# its own server as the tests do) about three minutes, the snapshot run (one
# experiment of BENCH_SNAP_EVENTS events written, then loaded whole and from a
# snapshot, then a reward near its end corrected with and without snapshots)
# about five minutes at 10⁷ events, the pending run (one experiment filled
# to 3·10⁵ pending against a fresh one, 3 pairs) about 10 s plus six times
# BENCH_DURATION.

BENCH_DURATION ?= 3
BENCH_LOG_EVENTS ?= 1000000
BENCH_SNAP_EVENTS ?= 10000000
BENCH_BINS := $(BUILD)/banditd $(BUILD)/bench/load $(BUILD)/bench/bare $(BUILD)/bench/policies \
              $(BUILD)/bench/snapload

$(BUILD)/bench/%: $(OBJ)/bench/%.o $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# bench/load starts its own PostgreSQL (load pg, load cluster) as the tests do
$(BUILD)/bench/load: $(OBJ)/bench/load.o $(OBJ)/tests/support/pgserver.o $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bench-deps:
	@./scripts/install-deps.sh --bench

bench: bench-deps
	@$(MAKE) --no-print-directory $(BENCH_BINS)
	@mkdir -p $(BUILD)/bench
	./$(BUILD)/bench/policies --ms 100 --out $(BUILD)/bench/policies.md
	./$(BUILD)/bench/load memory --daemon $(BUILD)/banditd --out $(BUILD)/bench/memory.md
	./$(BUILD)/bench/load throughput --daemon $(BUILD)/banditd --bare $(BUILD)/bench/bare \
		--duration $(BENCH_DURATION) --out $(BUILD)/bench/load.md
	./$(BUILD)/bench/load log --daemon $(BUILD)/banditd --events $(BENCH_LOG_EVENTS) \
		--out $(BUILD)/bench/log.md
	./$(BUILD)/bench/load metrics --daemon $(BUILD)/banditd --out $(BUILD)/bench/metrics.md
	./$(BUILD)/bench/load blocks --daemon $(BUILD)/banditd --duration $(BENCH_DURATION) \
		--out $(BUILD)/bench/blocks.md
	./$(BUILD)/bench/load pg --daemon $(BUILD)/banditd --conns 64,256 --pairs 3 \
		--duration $(BENCH_DURATION) --out $(BUILD)/bench/pg.md
	./$(BUILD)/bench/load cluster --daemon $(BUILD)/banditd --conns 64 \
		--duration $(BENCH_DURATION) --out $(BUILD)/bench/cluster.md
	./$(BUILD)/bench/snapload --events $(BENCH_SNAP_EVENTS) --out $(BUILD)/bench/snapload.md
	./$(BUILD)/bench/load pending --daemon $(BUILD)/banditd --duration $(BENCH_DURATION) \
		--out $(BUILD)/bench/pending.md
	@{ echo "# Benchmark results"; echo; echo "Written by \`make bench\` on $$(uname -n)."; echo; \
	  cat $(BUILD)/bench/load.md $(BUILD)/bench/memory.md $(BUILD)/bench/log.md \
	  $(BUILD)/bench/metrics.md $(BUILD)/bench/blocks.md $(BUILD)/bench/pg.md \
	  $(BUILD)/bench/cluster.md $(BUILD)/bench/snapload.md $(BUILD)/bench/pending.md \
	  $(BUILD)/bench/policies.md; } \
	  > bench/results.md
	@echo "written bench/results.md"

# --- formatting and static analysis ---------------------------------------------
#
#   make format        clang-format -i on every C file (.clang-format)
#   make format-check  what `make format` would change, as errors
#   make lint          format-check, cppcheck and clang-tidy; exits non-zero
#                      on any finding (a few minutes: clang-tidy's analyzer)
#
# clang-tidy (.clang-tidy, with tests/ and bench/ adding their own) runs on
# every C file with the build's flags, LINT_JOBS files at a time; a clean file
# leaves $(BUILD)/lint/<file>.tidy, so a second run only redoes files whose
# source, headers (gcc -MM) or configuration changed. cppcheck runs once on
# the whole tree (it follows calls across files) with the library files in
# scripts/lint/ (jansson's and cmocka's macros: it reads no system header).
# False positives are suppressed on their line with the reason:
# `// NOLINT(check): why`, `// cppcheck-suppress id ; why`.

LINT_JOBS ?= 2
LINT_DIR := $(BUILD)/lint
C_SRC := $(shell git ls-files '*.c')
FORMAT_SRC := $(shell git ls-files '*.c' '*.h')
TIDY_CONFIGS := $(wildcard .clang-tidy */.clang-tidy)
# The build's own flags, less what is for gcc's object files.
TIDY_FLAGS = $(filter-out -Werror -MMD -MP -g -O%,$(CFLAGS))
CPPCHECK_FLAGS := --quiet --error-exitcode=1 --enable=style,warning,performance,portability \
                  --inline-suppr --suppress=missingIncludeSystem -I. \
                  --library=scripts/lint/jansson.cfg --library=scripts/lint/cmocka.cfg

.PHONY: lint-deps lint-cppcheck lint-tidy

lint-deps:
	@./scripts/install-deps.sh --lint

format: lint-deps
	clang-format -i $(FORMAT_SRC)

format-check: lint-deps
	@$(if $(V),,echo "  FORMAT  check")
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRC)

# -k: every finding of every file in one run; -Otarget: one file's report
# in one piece.
lint: lint-deps
	@$(MAKE) --no-print-directory -k -Otarget -j$(LINT_JOBS) format-check lint-cppcheck lint-tidy

lint-cppcheck: $(LINT_DIR)/cppcheck.ok
lint-tidy: $(patsubst %.c,$(LINT_DIR)/%.tidy,$(C_SRC))

$(LINT_DIR)/cppcheck.ok: $(C_SRC) $(shell git ls-files '*.h') $(wildcard scripts/lint/*.cfg)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CPPCHECK")
	$(Q)cppcheck $(CPPCHECK_FLAGS) $(C_SRC)
	$(Q)touch $@

$(LINT_DIR)/%.tidy: %.c $(TIDY_CONFIGS)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TIDY    $<")
	$(Q)$(CC) -MM -MP -MT $@ -MF $@.d $(TIDY_FLAGS) $<
	$(Q)clang-tidy --quiet $< -- $(TIDY_FLAGS) > $@.log 2>&1 || \
		{ grep -v '^[0-9]* warnings\? \(and [0-9]* errors\? \)\?generated\.$$' $@.log; exit 1; }
	$(Q)touch $@

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# --- docs: generated parts ---------------------------------------------------
# docs/policies.md's parameter tables come from `bandit-sim --list-policies`
# (the registry itself) through scripts/docs_tool.c; tests/docs/test_docs.sh
# fails when they lag the code. `make docs-delays` re-measures every policy
# at feedback delays 0, 10 and 100 (scripts/docs_delays.sh; a few minutes),
# `make docs-blocks` at assignment blocks of 1, 10 and 100 (the same script)
# and `make docs-constraints` what the clinical constraints cost
# (scripts/docs_constraints.sh; about a minute): both write their tables
# into docs/measurements.md.
DOCS_POLICIES := docs/policies.md
DOCS_MEASUREMENTS := docs/measurements.md
DOCS_TOOL := $(BUILD)/scripts/docs-tool

$(DOCS_TOOL): scripts/docs_tool.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) $(shell pkg-config --cflags jansson) -o $@ $< \
		$(shell pkg-config --libs jansson) -lm

.PHONY: docs-policies docs-delays docs-blocks docs-constraints docs-defaults docs-oc \
	docs-thresholds
docs-policies: $(BUILD)/bandit-sim $(DOCS_TOOL)
	$(BUILD)/bandit-sim --list-policies | $(DOCS_TOOL) params $(DOCS_POLICIES)

docs-delays: $(BUILD)/bandit-sim $(DOCS_TOOL)
	BANDIT_SIM=$(BUILD)/bandit-sim DOCS_TOOL=$(DOCS_TOOL) ./scripts/docs_delays.sh \
		$(DOCS_MEASUREMENTS)

docs-blocks: $(BUILD)/bandit-sim $(DOCS_TOOL)
	BANDIT_SIM=$(BUILD)/bandit-sim DOCS_TOOL=$(DOCS_TOOL) ./scripts/docs_delays.sh \
		$(DOCS_MEASUREMENTS) block

# The proven stop rules with their sampling rules against T*(μ)·kl(δ, 1 − δ):
# what the default policy and stop were chosen from (scripts/docs_defaults.py).
docs-defaults: $(BUILD)/bandit-sim $(BUILD)/scripts/tstar $(DOCS_TOOL)
	BANDIT_SIM=$(BUILD)/bandit-sim TSTAR=$(BUILD)/scripts/tstar DOCS_TOOL=$(DOCS_TOOL) \
		./scripts/docs_defaults.py $(DOCS_MEASUREMENTS)

# The floors quote docs/measurements.md's default table (make docs-defaults);
# through a file, so that a failure splices nothing.
docs-thresholds: $(BUILD)/scripts/thresholds $(BUILD)/scripts/floors $(DOCS_TOOL)
	$(BUILD)/scripts/thresholds | $(DOCS_TOOL) splice docs/stop-rules.md thresholds
	$(BUILD)/scripts/floors $(DOCS_MEASUREMENTS) > $(BUILD)/floors.md
	$(DOCS_TOOL) splice docs/stop-rules.md floors < $(BUILD)/floors.md

# Operating-characteristics reports (bandit-sim oc; about four minutes): a
# three-arm trial with a control (goal control, docs/oc-example.md), a
# calibration of δ (a best-arm design with the heuristic GLR stop,
# docs/oc-calibration-example.md), and the same control trial calibrated
# (goal.scale, unproven, held under every null, the least favourable binding:
# docs/oc-control-calibration-example.md); each with its JSON under docs/oc/.
docs-oc: $(BUILD)/bandit-sim
	$(BUILD)/bandit-sim oc --design docs/oc/trial3-design.json \
		--scenarios docs/oc/trial3-scenarios.json --runs 2000 --seed 1 \
		--no-progress --pretty --markdown docs/oc-example.md \
		--svg docs/img/oc-example-sample-size.svg > docs/oc/trial3-report.json
	$(BUILD)/bandit-sim oc --design docs/oc/calibration-design.json \
		--scenarios docs/oc/calibration-scenarios.json --runs 2000 --seed 1 --calibrate 0.05 \
		--no-progress --pretty --markdown docs/oc-calibration-example.md \
		> docs/oc/calibration-report.json
	$(BUILD)/bandit-sim oc --design docs/oc/trial3-design.json \
		--scenarios docs/oc/trial3-scenarios.json --runs 1000 --seed 1 --calibrate 0.05 \
		--iterations 8 \
		--no-progress --pretty --markdown docs/oc-control-calibration-example.md \
		> docs/oc/trial3-calibrated-report.json

docs-constraints: $(BUILD)/bandit-sim $(DOCS_TOOL)
	BANDIT_SIM=$(BUILD)/bandit-sim DOCS_TOOL=$(DOCS_TOOL) ./scripts/docs_constraints.sh \
		$(DOCS_MEASUREMENTS)
