/*
 * describe.c — the policies as data for clients (describe.h).
 */
#include "policies/describe.h"

#include "policies/stop_rule.h"

/* Parameter values by name; ENUM values by their choice's name (new). */
json_t *describe_params(const struct policy_ops *ops, const struct policy_params *pp)
{
    json_t *o = json_object();
    if (o == NULL || ops->params == NULL)
        return o;
    for (int i = 0; i < POLICY_MAX_PARAMS && ops->params[i].name != NULL; i++) {
        const struct policy_param_spec *s = &ops->params[i];
        double v = pp->values[i];
        json_t *jv = s->type == POLICY_PARAM_ENUM  ? json_string(s->choices[(size_t)v])
                     : s->type == POLICY_PARAM_INT ? json_integer((json_int_t)v)
                                                   : json_real(v);
        json_object_set_new(o, s->name, jv);
    }
    return o;
}

static const struct {
    unsigned flag;
    const char *name;
} flag_names[] = {
    {POLICY_F_FIXED_CONFIDENCE, "fixed_confidence"},
    {POLICY_F_FIXED_BUDGET, "fixed_budget"},
    {POLICY_F_MULTI, "multi_bandit"},
    {POLICY_F_TOPM, "top_m"},
    {POLICY_F_NEEDS_EPSILON, "needs_epsilon"},
    {POLICY_F_OWN_STOP, "own_stop"},
    {POLICY_F_BAYES, "bayesian"},
    {POLICY_F_NEEDS_TARGET, "needs_target_arm"},
    {POLICY_F_REGRET, "regret"},
    {POLICY_F_GLR_STOP, "glr_stop"},
    {POLICY_F_RHO_STOP, "rho_stop"},
    {POLICY_F_CONTROL, "control"},
};

static json_t *param_spec_json(const struct policy_param_spec *s)
{
    static const char *const type_names[] = {"number", "integer", "enum"};
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "type", json_string(type_names[s->type]));
    if (s->type == POLICY_PARAM_ENUM) {
        json_object_set_new(o, "default", json_string(s->choices[(size_t)s->def]));
        json_t *c = json_array();
        for (size_t i = 0; s->choices[i] != NULL; i++)
            json_array_append_new(c, json_string(s->choices[i]));
        json_object_set_new(o, "choices", c);
    } else if (s->type == POLICY_PARAM_INT) {
        json_object_set_new(o, "default", json_integer((json_int_t)s->def));
        json_object_set_new(o, "min", json_integer((json_int_t)s->min));
        json_object_set_new(o, "max", json_integer((json_int_t)s->max));
    } else {
        json_object_set_new(o, "default", json_real(s->def));
        json_object_set_new(o, "min", json_real(s->min));
        json_object_set_new(o, "max", json_real(s->max));
    }
    json_object_set_new(o, "doc", json_string(s->doc != NULL ? s->doc : ""));
    return o;
}

json_t *describe_policies(void)
{
    json_t *list = json_array();
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++) {
        const struct policy_ops *ops = *pp;
        json_t *flags = json_array();
        for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
            if (ops->flags & flag_names[i].flag)
                json_array_append_new(flags, json_string(flag_names[i].name));
        json_t *params = json_array();
        for (int i = 0; ops->params != NULL && i < POLICY_MAX_PARAMS && ops->params[i].name != NULL;
             i++)
            json_array_append_new(params, param_spec_json(&ops->params[i]));
        /* The rule a new experiment of this policy stops on without
         * stop_rule, with the default parameters and no budget. */
        struct engine_config c = {.policy = ops, .bound = STATS_BOUND_ANYTIME};
        policy_params_defaults(ops, &c.params);
        enum engine_stop_rule def = engine_resolve_rule(&c);
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:o, s:o, s:s, s:b, s:b}", "name", ops->name,
                                        "summary", ops->summary ? ops->summary : "", "flags", flags,
                                        "params", params, "default_stop", stop_rule_name(def),
                                        "default_stop_proven", engine_rule_proven(&c, def),
                                        "own_stop_proven", policy_own_stop_proven(ops, &c.params)));
    }
    json_t *stops = json_array();
    size_t n;
    const struct stop_rule_info *rules = stop_rule_all(&n);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_pack("{s:s, s:s, s:o, s:s}", "name", rules[i].name, "proof",
                              stop_rule_proof_name(rules[i].proof), "proven",
                              rules[i].proof == STOP_RULE_PER_POLICY
                                  ? json_null()
                                  : json_boolean(rules[i].proof == STOP_RULE_PROVEN),
                              "summary", rules[i].summary);
        if (r != NULL && stop_rule_unproven_when(rules[i].rule) != NULL)
            json_object_set_new(r, "unproven_when",
                                json_string(stop_rule_unproven_when(rules[i].rule)));
        json_array_append_new(stops, r);
    }
    return json_pack("{s:o, s:o}", "policies", list, "stop_rules", stops);
}
