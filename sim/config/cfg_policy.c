/* Per-size allreduce backend selection (see cfg_policy.h). */
#include "cfg_policy.h"

#include "cfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cfg_parse_bytes(const char *s, long long *out)
{
    if (!s || !*s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    long long mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = 1LL << 10; end++; break;
    case 'm': mult = 1LL << 20; end++; break;
    case 'g': mult = 1LL << 30; end++; break;
    default: break;
    }
    /* Optional unit: "B", or "iB" after a suffix (8MB, 8MiB). */
    if (mult > 1 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
        end += 2;
    else if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || v > (unsigned long long)(9e18 / (double)mult))
        return -1;
    *out = (long long)v * mult;
    return 0;
}

const char *cfg_format_bytes(long long b, char *buf, size_t len)
{
    if (b > 0 && b % (1LL << 30) == 0)
        snprintf(buf, len, "%lldG", b >> 30);
    else if (b > 0 && b % (1LL << 20) == 0)
        snprintf(buf, len, "%lldM", b >> 20);
    else if (b > 0 && b % (1LL << 10) == 0)
        snprintf(buf, len, "%lldK", b >> 10);
    else
        snprintf(buf, len, "%lld", b);
    return buf;
}

static const char *valid_list(char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int b = 0; b < CFG_BACKEND_COUNT && off < len; b++)
        if (cfg_backend_reduces(b))
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", cfg_backend_names[b]);
    return buf;
}

void cfg_policy_single(cfg_policy *p, int backend)
{
    memset(p, 0, sizeof(*p));
    p->n = 1;
    p->rule[0].max_bytes = -1;
    p->rule[0].backend = backend;
}

int cfg_policy_parse(const char *spec, cfg_policy *p, char *why, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    char list[128];
    if (!spec || !*spec) {
        snprintf(why, why_len, "empty allreduce policy; write e.g. \"oneshot<=256K,twoshot<=8M,nccl\"");
        return -1;
    }
    const char *s = spec;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        char item[96];
        if (n == 0 || n >= sizeof(item)) {
            snprintf(why, why_len, "allreduce policy \"%s\": empty or over-long rule", spec);
            return -1;
        }
        memcpy(item, s, n);
        item[n] = '\0';
        if (p->n == CFG_POLICY_MAX_RULES) {
            snprintf(why, why_len, "allreduce policy \"%s\": more than %d rules", spec, CFG_POLICY_MAX_RULES);
            return -1;
        }
        cfg_policy_rule *r = &p->rule[p->n];
        r->max_bytes = -1;
        char *le = strstr(item, "<=");
        if (le) {
            *le = '\0';
            if (cfg_parse_bytes(le + 2, &r->max_bytes) || r->max_bytes <= 0) {
                snprintf(why, why_len, "allreduce policy \"%s\": '%s' is not a size (bytes, or with K/M/G)", spec,
                         le + 2);
                return -1;
            }
        }
        r->backend = cfg_enum_index(cfg_backend_names, item);
        if (!cfg_backend_reduces(r->backend)) {
            snprintf(why, why_len, "allreduce policy \"%s\": unknown backend '%s'; valid choices: %s", spec, item,
                     valid_list(list, sizeof(list)));
            return -1;
        }
        if (p->n > 0 && p->rule[p->n - 1].max_bytes < 0) {
            snprintf(why, why_len, "allreduce policy \"%s\": a rule follows the unbounded rule '%s'", spec,
                     cfg_backend_names[p->rule[p->n - 1].backend]);
            return -1;
        }
        if (p->n > 0 && r->max_bytes >= 0 && r->max_bytes <= p->rule[p->n - 1].max_bytes) {
            /* An equal bound is not a larger one: the second rule could never match. */
            const bool same = r->max_bytes == p->rule[p->n - 1].max_bytes;
            snprintf(why, why_len, "allreduce policy \"%s\": bounds must increase ('%.*s' %s, so it could never "
                                   "match)",
                     spec, (int)n, s, same ? "repeats the bound of the rule before it" : "comes after a larger bound");
            return -1;
        }
        p->n++;
        s += n;
        if (*s == ',') {
            s++;
            if (!*s) {
                snprintf(why, why_len, "allreduce policy \"%s\": trailing comma", spec);
                return -1;
            }
        }
    }
    if (p->rule[p->n - 1].max_bytes >= 0) {
        snprintf(why, why_len, "allreduce policy \"%s\": the last rule must have no bound (e.g. end with \",nccl\")",
                 spec);
        return -1;
    }
    return 0;
}

int cfg_policy_rule_for(const cfg_policy *p, long long bytes)
{
    for (int i = 0; i < p->n; i++)
        if (p->rule[i].max_bytes < 0 || bytes <= p->rule[i].max_bytes)
            return i;
    return p->n - 1;
}

int cfg_policy_pick(const cfg_policy *p, long long bytes)
{
    return p->n ? p->rule[cfg_policy_rule_for(p, bytes)].backend : CFG_BACKEND_NCCL;
}

const char *cfg_policy_format(const cfg_policy *p, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n && off < len; i++) {
        char b[32] = "";
        if (p->rule[i].max_bytes >= 0)
            cfg_format_bytes(p->rule[i].max_bytes, b, sizeof(b));
        off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s", i ? "," : "", cfg_backend_names[p->rule[i].backend],
                                b[0] ? "<=" : "", b);
    }
    return buf;
}

int cfg_policy_vllm(int world, bool full_nvlink, cfg_policy *p, char *why, size_t why_len)
{
    /* vLLM CustomAllreduce: max_size = 8192 * 1024 by default; should_custom_ar needs inp_size < max_size
     * (strict, hence the -1 on every bound below) and inp_size % 16 == 0. */
    const long long max_size = 8LL << 20;
    memset(p, 0, sizeof(*p));
    if (world != 2 && world != 4 && world != 6 && world != 8) {
        cfg_policy_single(p, CFG_BACKEND_NCCL);
        snprintf(why, why_len, "vLLM/SGLang have custom allreduce only for world sizes 2, 4, 6, 8 (here %d): NCCL",
                 world);
        return -1;
    }
    if (world > 2 && !full_nvlink) {
        cfg_policy_single(p, CFG_BACKEND_NCCL);
        snprintf(why, why_len,
                 "vLLM/SGLang disable custom allreduce for world_size > 2 without full NVLink (here %d GPUs): NCCL",
                 world);
        return -1;
    }
    p->n = 0;
    if (world == 2) {
        p->rule[p->n++] = (cfg_policy_rule){max_size - 1, CFG_BACKEND_ONESHOT};
    } else {
        const long long oneshot_below = world <= 4 ? 512LL << 10 : 256LL << 10;
        p->rule[p->n++] = (cfg_policy_rule){oneshot_below - 1, CFG_BACKEND_ONESHOT};
        p->rule[p->n++] = (cfg_policy_rule){max_size - 1, CFG_BACKEND_TWOSHOT};
    }
    p->rule[p->n++] = (cfg_policy_rule){-1, CFG_BACKEND_NCCL};
    snprintf(why, why_len,
             "vLLM/SGLang would use custom allreduce here (world %d%s) for payloads under 8 MiB that are multiples of "
             "16 B; NCCL otherwise",
             world, world == 2 ? "" : ", full NVLink");
    return 0;
}

int cfg_policy_check(const char *spec, char *why, size_t why_len)
{
    cfg_policy p;
    return cfg_policy_parse(spec, &p, why, why_len);
}
