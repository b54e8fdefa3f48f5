/*
 * trun.c — experiments made in-process for unit tests (trun.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include <jansson.h>

#include "exp/exp.h"
#include "store/store.h"
#include "tests/support/trun.h"
#include "tests/support/tstore.h"

struct exp *trun_create(const char *body)
{
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr), *errors = json_array();
    struct exp_config cfg;
    if (j == NULL)
        fail_msg("not JSON: %s (%s)", body, jerr.text);
    assert_non_null(errors);
    if (exp_config_parse(j, exp_limits(), &cfg, errors) != 0) {
        char *e = json_dumps(errors, 0);
        fail_msg("%s refused: %s", body, e != NULL ? e : "?");
    }
    json_decref(j);
    json_decref(errors);
    struct twait w;
    twait_init(&w);
    struct exp *x = NULL;
    assert_int_equal(exp_create(&cfg, NULL, NULL, twait_done, &w, &x), EXP_OK);
    assert_int_equal(twait_wait(&w), STORE_OK);
    return x;
}
