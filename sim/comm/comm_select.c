/* The per-size composite backend (see comm_select.h). */
#include "comm_select.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct select_member {
    int backend;
    const comm_backend *table;
    void *state;
} select_member;

typedef struct select_state {
    comm_select_opts o; /* a copy of the options the instance was initialised with */
    select_member m[CFG_BACKEND_COUNT];
    int n;
    long long rule_calls[CFG_POLICY_MAX_RULES]; /* allreduces each rule served: the routing, observable */
} select_state;

/* The distinct backends the policy uses, all-gather's included, in first-use order. */
static int members(const comm_select_opts *o, int out[CFG_BACKEND_COUNT])
{
    int n = 0;
    for (int i = 0; i <= o->policy.n; i++) {
        int b = i < o->policy.n ? o->policy.rule[i].backend : o->allgather;
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup = dup || out[j] == b;
        if (!dup && b >= 0 && n < CFG_BACKEND_COUNT)
            out[n++] = b;
    }
    return n;
}

static const char *policy_text(const comm_select_opts *o, char *buf, size_t len)
{
    cfg_policy_format(&o->policy, buf, len);
    return buf;
}

/* A member runs with its own state and no options of the composite's. */
#define AS_MEMBER(x, m, call)                                                                                          \
    do {                                                                                                               \
        void *const saved_state_ = (x)->state;                                                                         \
        const void *const saved_opts_ = (x)->opts;                                                                     \
        (x)->state = (m)->state;                                                                                       \
        (x)->opts = NULL;                                                                                              \
        call;                                                                                                          \
        (m)->state = (x)->state;                                                                                       \
        (x)->state = saved_state_;                                                                                     \
        (x)->opts = saved_opts_;                                                                                       \
    } while (0)

/* Every member's supported() is called, in the same order on every rank (some are collective),
 * before the first failure is reported. */
static int select_supported(comm_ctx *x, char *why, size_t len)
{
    const comm_select_opts *o = x->opts;
    int list[CFG_BACKEND_COUNT], n = members(o, list), rc = 0;
    char pol[160];
    policy_text(o, pol, sizeof(pol));
    for (int i = 0; i < n; i++) {
        char w[320] = "";
        const comm_backend *c = comm_find_backend(list[i], w, sizeof(w));
        int ok = -1;
        if (c) {
            x->opts = NULL;
            ok = c->supported(x, w, sizeof(w));
            x->opts = o;
        }
        if (ok == 0)
            continue;
        if (rc == 0)
            snprintf(why, len, "policy '%s': backend %s: %s", pol, cfg_backend_names[list[i]], w);
        rc = -1;
    }
    return rc;
}

static void select_init(comm_ctx *x)
{
    select_state *s = util_xcalloc(1, sizeof(*s));
    s->o = *(const comm_select_opts *)x->opts;
    int list[CFG_BACKEND_COUNT];
    s->n = members(&s->o, list);
    x->state = s;
    for (int i = 0; i < s->n; i++) {
        char why[320];
        select_member *m = &s->m[i];
        m->backend = list[i];
        m->table = comm_find_backend(list[i], why, sizeof(why));
        if (!m->table)
            dist_fail(__FILE__, __LINE__, "comm_select", why);
        m->state = NULL;
        AS_MEMBER(x, m, m->table->init(x));
    }
}

static select_member *member(select_state *s, int backend)
{
    for (int i = 0; i < s->n; i++)
        if (s->m[i].backend == backend)
            return &s->m[i];
    dist_fail(__FILE__, __LINE__, "comm_select", "policy picked a backend that was not initialised");
}

static void select_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    select_state *s = x->state;
    const int rule = cfg_policy_rule_for(&s->o.policy, count * (long long)x->dev->elem_bytes);
    select_member *m = member(s, s->o.policy.rule[rule].backend);
    s->rule_calls[rule]++;
    AS_MEMBER(x, m, m->table->allreduce(x, op, flat, send, recv, count));
}

/* fusion.allreduce_residual_norm: the allreduce's rule picks the member; a member without allreduce_norm
 * runs its allreduce and the device's residual add + norm (the unfused sequence). */
static void select_allreduce_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                                  void *residual, const void *weight, long long count)
{
    select_state *s = x->state;
    const int rule = cfg_policy_rule_for(&s->o.policy, count * (long long)x->dev->elem_bytes);
    select_member *m = member(s, s->o.policy.rule[rule].backend);
    s->rule_calls[rule]++;
    if (m->table->allreduce_norm) {
        AS_MEMBER(x, m, m->table->allreduce_norm(x, op, flat, send, recv, residual, weight, count));
    } else {
        AS_MEMBER(x, m, m->table->allreduce(x, op, flat, send, recv, count));
        x->dev->residual_norm(x, recv, residual, weight, op->m, op->n);
    }
}

static void select_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    select_state *s = x->state;
    select_member *m = member(s, s->o.allgather);
    AS_MEMBER(x, m, m->table->allgather(x, op, flat, send, recv, count));
}

/* Reduce-scatters go by payload size like allreduces (the same rule for the same bytes); a rule whose
 * backend has none (nccl-symm) hands them to the all-gather backend, and if that has none either the
 * job stops naming both. Not counted in policy_calls, which counts allreduces. */
static void select_reduce_scatter(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                                  long long count)
{
    select_state *s = x->state;
    const int rule = cfg_policy_rule_for(&s->o.policy, count * (long long)x->dev->elem_bytes);
    select_member *m = member(s, s->o.policy.rule[rule].backend);
    if (!m->table->reduce_scatter) {
        select_member *ag = member(s, s->o.allgather);
        if (!ag->table->reduce_scatter) {
            char msg[160];
            snprintf(msg, sizeof(msg), "policy: neither %s (the rule for this size) nor the all-gather backend %s "
                     "has a reduce-scatter", cfg_backend_names[m->backend], cfg_backend_names[ag->backend]);
            dist_fail(__FILE__, __LINE__, "comm_select", msg);
        }
        m = ag;
    }
    AS_MEMBER(x, m, m->table->reduce_scatter(x, op, flat, send, recv, count));
}

static void select_fini(comm_ctx *x)
{
    select_state *s = x->state;
    if (!s)
        return;
    for (int i = s->n - 1; i >= 0; i--)
        AS_MEMBER(x, &s->m[i], s->m[i].table->fini(x));
    free(s);
    x->state = NULL;
}

/* Each member describes itself into a fresh environment; its keys come back prefixed "name.". */
static void select_describe(comm_ctx *x)
{
    select_state *s = x->state;
    if (!s)
        return;
    util_env_item *env = x->env, *got = util_xcalloc(UTIL_ENV_MAX, sizeof(*got));
    int *n_env = x->n_env;
    for (int i = 0; i < s->n; i++) {
        int n_got = 0;
        x->env = got;
        x->n_env = &n_got;
        AS_MEMBER(x, &s->m[i], s->m[i].table->describe(x));
        x->env = env;
        x->n_env = n_env;
        for (int k = 0; k < n_got; k++) {
            char key[sizeof(got[k].key)];
            snprintf(key, sizeof(key), "%.12s.%.34s", cfg_backend_names[s->m[i].backend], got[k].key);
            comm_env_set(x, key, "%s", got[k].value);
        }
    }
    free(got);
    char pol[160], calls[160] = "";
    comm_env_set(x, "comm", "per-size policy %s; all-gathers: %s", policy_text(&s->o, pol, sizeof(pol)),
                 cfg_backend_names[s->o.allgather]);
    size_t off = 0;
    for (int i = 0; i < s->o.policy.n && off < sizeof(calls); i++) {
        char rule[48];
        cfg_policy one = {.n = 1, .rule = {s->o.policy.rule[i]}};
        off += (size_t)snprintf(calls + off, sizeof(calls) - off, "%s%s: %lld", i ? ", " : "",
                                cfg_policy_format(&one, rule, sizeof(rule)), s->rule_calls[i]);
    }
    comm_env_set(x, "policy_calls", "allreduces per rule on this rank: %s", calls);
}

#define SELECT_TABLE(var, safe)                                                                                         \
    static const comm_backend var = {                                                                                   \
        .name = "policy",                                                                                               \
        .graph_safe = safe,                                                                                             \
        .supported = select_supported,                                                                                  \
        .init = select_init,                                                                                            \
        .fini = select_fini,                                                                                            \
        .allreduce = select_allreduce,                                                                                  \
        .allgather = select_allgather,                                                                                  \
        .reduce_scatter = select_reduce_scatter,                                                                        \
        .allreduce_norm = select_allreduce_norm,                                                                        \
        .describe = select_describe,                                                                                    \
    }

SELECT_TABLE(select_graph_safe, true);
SELECT_TABLE(select_eager, false);

const comm_backend *comm_select_configure(const cfg_policy *p, int allgather_backend, comm_select_opts *opts)
{
    opts->policy = *p;
    opts->allgather = allgather_backend >= 0 ? allgather_backend : p->rule[p->n - 1].backend;
    int list[CFG_BACKEND_COUNT], n = members(opts, list);
    bool safe = true;
    for (int i = 0; i < n; i++) {
        char why[320];
        const comm_backend *c = comm_find_backend(list[i], why, sizeof(why));
        safe = safe && c && c->graph_safe;
    }
    return safe ? &select_graph_safe : &select_eager;
}

