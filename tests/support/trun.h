/*
 * trun.h — experiments of the runtime (exp/exp.h) made in-process, for the
 * unit tests that drive exp_ev_* on a tstore (tstore.h) rather than over
 * HTTP (harness.h's texp_* do that).
 *
 *   exp_registry_init(t->s, &limits);
 *   struct exp *x = trun_create("{\"id\":\"e\",\"arms\":[\"a\",\"b\"]}");
 *   ... exp_lock(x); exp_ev_assign(x, &b, ...); ...
 *   exp_put(x);
 */
#ifndef BANDITD_TESTS_SUPPORT_TRUN_H
#define BANDITD_TESTS_SUPPORT_TRUN_H

struct exp;

/* The experiment of the create body `body` (JSON text, parsed under the
 * registry's limits), its creation committed: a new reference (exp_put).
 * Fails the running cmocka test, with the parser's errors, when the body
 * is refused or the creation does not commit. */
struct exp *trun_create(const char *body);

#endif
