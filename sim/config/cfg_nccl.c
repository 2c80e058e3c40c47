/* NCCL tuning as environment variables (see cfg_nccl.h for the variables and where they are documented). */
#include "cfg_nccl.h"

#include "cfg_policy.h"

#include <stdio.h>
#include <string.h>

const char *const cfg_nccl_proto_names[] = {"auto", "LL", "LL128", "Simple", NULL};
const char *const cfg_nccl_algo_names[] = {"auto", "ring", "tree", NULL};

/* The spellings NCCL's parser documents (it compares without case). */
static const char *const algo_env[] = {"", "Ring", "Tree"};

bool cfg_nccl_tuned(const cfg_nccl_tuning *t)
{
    return t && (t->channels > 0 || t->protocol != CFG_NCCL_PROTO_AUTO || t->algorithm != CFG_NCCL_ALGO_AUTO ||
                 t->buffsize > 0);
}

static void put(cfg_nccl_env_pair *out, int *n, const char *name, const char *value)
{
    snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
    snprintf(out[*n].value, sizeof(out[*n].value), "%s", value);
    (*n)++;
}

int cfg_nccl_env(const cfg_nccl_tuning *t, int nccl_version, cfg_nccl_env_pair *out, char *why, size_t why_len)
{
    int n = 0;
    char v[32];
    if (!t)
        return 0;
    const bool per_coll = nccl_version == 0 || nccl_version >= CFG_NCCL_PER_COLL_ALGO_VERSION;
    if (t->algorithm == CFG_NCCL_ALGO_TREE && !per_coll) {
        snprintf(why, why_len,
                 "nccl.algorithm=tree needs NCCL 2.24 or later (NCCL_ALGO=allreduce:tree); this NCCL is %d.%d.%d, "
                 "where NCCL_ALGO=Tree would leave all-gathers, which run as rings only, without an algorithm",
                 nccl_version / 10000, (nccl_version / 100) % 100, nccl_version % 100);
        return -1;
    }
    if (t->channels > 0) {
        /* Both bounds: MAX alone lets NCCL pick fewer, MIN alone more. */
        snprintf(v, sizeof(v), "%d", t->channels);
        put(out, &n, "NCCL_MIN_NCHANNELS", v);
        put(out, &n, "NCCL_MAX_NCHANNELS", v);
    }
    if (t->protocol != CFG_NCCL_PROTO_AUTO)
        put(out, &n, "NCCL_PROTO", cfg_nccl_proto_names[t->protocol]);
    if (t->algorithm != CFG_NCCL_ALGO_AUTO) {
        /* Before 2.24 a bare name applies to every collective: harmless for Ring (all-gather's only one). */
        snprintf(v, sizeof(v), per_coll ? "allreduce:%s" : "%s",
                 per_coll ? cfg_nccl_algo_names[t->algorithm] : algo_env[t->algorithm]);
        put(out, &n, "NCCL_ALGO", v);
    }
    if (t->buffsize > 0) {
        snprintf(v, sizeof(v), "%lld", t->buffsize);
        put(out, &n, "NCCL_BUFFSIZE", v);
    }
    return n;
}

const char *cfg_nccl_describe(const cfg_nccl_tuning *t, char *buf, size_t len)
{
    if (!cfg_nccl_tuned(t)) {
        snprintf(buf, len, "NCCL decides everything");
        return buf;
    }
    char ch[16], bs[32];
    if (t->channels > 0)
        snprintf(ch, sizeof(ch), "%d", t->channels);
    else
        snprintf(ch, sizeof(ch), "auto");
    if (t->buffsize > 0)
        cfg_format_bytes(t->buffsize, bs, sizeof(bs));
    else
        snprintf(bs, sizeof(bs), "default");
    snprintf(buf, len, "channels %s, protocol %s, algorithm %s, buffsize %s", ch, cfg_nccl_proto_names[t->protocol],
             cfg_nccl_algo_names[t->algorithm], bs);
    return buf;
}

int cfg_bind_nccl_buffsize(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f;
    long long b = 0;
    if (n->kind != CFG_NODE_SCALAR || cfg_parse_bytes(n->scalar, &b)) {
        cfg_errorf(err, n, "%s: expected 0 (NCCL's default) or bytes, e.g. 1048576, 1M or 512K", path);
        return -1;
    }
    /* NCCL's documentation asks for powers of 2; the bounds only reject typos (a missing suffix). */
    if (b != 0 && (b < (4LL << 10) || b > (1LL << 30) || (b & (b - 1)) != 0)) {
        cfg_errorf(err, n, "%s: %lld bytes; expected 0 (NCCL's default) or a power of 2 from 4K to 1G", path, b);
        return -1;
    }
    *(long long *)slot = b;
    return 0;
}
