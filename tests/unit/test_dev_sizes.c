/* The devices never trust a plan's sizes: hand-edited `--plan` files whose shapes would divide by zero,
 * wrap a byte count or index past a buffer are refused with exit 2 before anything is allocated
 * (through `vpsim run --plan FILE --device cpu`), and the checked size helpers they use are tested
 * directly (a load-time range check may catch some of these plans first; the devices must not rely
 * on it). */
#include "../../sim/exec/dev_sizes.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A one-rank plan of one phase holding `ops` (JSON objects, comma-separated); path to free. */
static char *plan_with(const char *ops)
{
    char *text = util_xasprintf("{\"schema\": \"vpsim.plan/1\", \"scenario\": \"hand-edited\", \"ranks\": 1,\n"
                                " \"batch\": 1, \"context\": 16, \"active_experts\": 0, \"expected_tokens\": 1,\n"
                                " \"phases\": [{\"name\": \"decode\", \"kind\": \"decode\", \"model\": \"target\",\n"
                                "  \"tokens\": 2, \"batch\": 1, \"ops\": [\n%s\n]}]}\n",
                                ops);
    char *path = th_write_temp(text, strlen(text), ".json");
    free(text);
    return path;
}

#define GEMM(kind, name, m, n, k, batch)                                                                                \
    "{\"kind\": \"" kind "\", \"name\": \"" name "\", \"layer\": 0, \"stream\": \"main\", \"adtype\": \"bf16\", "       \
    "\"m\": " m ", \"n\": " n ", \"k\": " k ", \"batch\": " batch ", \"wdtype\": \"bf16\", \"wgroup\": 0}"
#define ATTN(name, heads, kv_heads, qk, v, shared)                                                                      \
    "{\"kind\": \"attention\", \"name\": \"" name "\", \"layer\": 0, \"stream\": \"main\", \"adtype\": \"bf16\", "      \
    "\"batch\": 1, \"q_len\": 2, \"kv_len\": 16, \"heads\": " heads ", \"kv_heads\": " kv_heads ", \"qk_dim\": " qk   \
    ", \"v_dim\": " v ", \"kv_shared\": " shared "}"

static th_result run_plan(const char *ops)
{
    char *path = plan_with(ops);
    th_result r = th_run("run --plan '%s' --device cpu --backend none", path);
    unlink(path);
    free(path);
    return r;
}

/* The plan is refused as a bad request: exit 2 (not a signal, not a run), a message on stderr that
 * names `what`, no results printed. */
static void expect_refused(const char *ops, const char *what)
{
    th_result r = run_plan(ops);
    cr_assert_eq(r.status, 2, "exit status %d, want 2 (a refused plan); stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, what), "stderr does not name '%s':\n%s", what, r.err);
    cr_assert_null(strstr(r.out, "tok/s"), "the plan ran:\n%s", r.out);
    th_free(&r);
}

Test(dev_sizes, sane_plan_runs)
{
    th_result r = run_plan(GEMM("grouped_gemm", "experts", "8", "16", "16", "4") ",\n" ATTN("attn", "4", "2", "8", "8",
                                                                                           "false"));
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    th_free(&r);
}

Test(dev_sizes, grouped_gemm_batch_0_is_refused_not_sigfpe)
{
    expect_refused(GEMM("grouped_gemm", "experts", "8", "16", "16", "0"), "batch");
}

Test(dev_sizes, gemm_whose_bytes_wrap_is_refused)
{
    /* 2^30 x 2^30 x 16 weights x 4 bytes = 2^66: wrapped to 0 it passed the host-memory check. */
    expect_refused(GEMM("gemm", "huge", "1073741824", "1073741824", "1073741824", "16"), "huge");
}

Test(dev_sizes, gemm_dimension_past_int_is_refused)
{
    /* BLAS takes int: m = 2^32 + 8 became m = 8. */
    expect_refused(GEMM("gemm", "tall", "4294967304", "16", "16", "1"), "tall");
}

Test(dev_sizes, embedding_without_vocabulary_is_refused)
{
    expect_refused(GEMM("embedding", "embed", "4", "16", "0", "1"), "embed");
}

Test(dev_sizes, attention_kv_heads_not_dividing_heads_is_refused)
{
    /* heads / kv_heads = 0 query heads per group: a division by zero in the CPU attention. */
    expect_refused(ATTN("attn", "2", "4", "8", "8", "false"), "kv_heads");
}

Test(dev_sizes, attention_shared_cache_wider_values_is_refused)
{
    /* With kv_shared the values are read from the key rows: v_dim > qk_dim read past the cache. */
    expect_refused(ATTN("mla", "4", "1", "8", "16", "true"), "v_dim");
}

/* ---------------- the helpers themselves ---------------- */

Test(dev_sizes, product_that_wraps_is_bad)
{
    dev_size s = dev_size_prod(1LL << 30, 1LL << 30, 1LL << 30, 16);
    cr_assert(s.bad, "2^94 must not fit");
    cr_assert(dev_size_mul(dev_size_of(1LL << 32), 1LL << 32).bad, "2^64 wraps to 0 in uint64");
    cr_assert(dev_size_mul(dev_size_of(INT64_MAX), 2).bad);
    dev_size ok = dev_size_prod(1LL << 20, 1LL << 20, 1024, 4);
    cr_assert(!ok.bad);
    cr_assert_eq(ok.v, 1ULL << 52);
}

Test(dev_sizes, negative_factor_is_bad_and_badness_sticks)
{
    cr_assert(dev_size_of(-1).bad);
    cr_assert(dev_size_mul(dev_size_of(4), -2).bad);
    dev_size bad = dev_size_mul(dev_size_of(1LL << 40), 1LL << 40);
    cr_assert(dev_size_mul(bad, 0).bad, "a wrapped factor times 0 must stay bad");
    cr_assert(dev_size_add(bad, dev_size_of(1)).bad);
    cr_assert(dev_size_max(dev_size_of(1), bad).bad);
}

Test(dev_sizes, sum_and_alignment_overflow)
{
    cr_assert(dev_size_add(dev_size_of(INT64_MAX), dev_size_of(1)).bad);
    cr_assert(dev_size_align(dev_size_of(INT64_MAX), 256).bad);
    dev_size a = dev_size_align(dev_size_of(257), 256);
    cr_assert(!a.bad);
    cr_assert_eq(a.v, 512u);
    cr_assert_eq(dev_size_align(dev_size_of(0), 256).v, 0u);
}

static plan_op gemm_op(plan_op_kind kind, long long m, long long n, long long k, int batch)
{
    plan_op op;
    memset(&op, 0, sizeof(op));
    op.kind = kind;
    snprintf(op.name, sizeof(op.name), "op");
    op.m = m;
    op.n = n;
    op.k = k;
    op.batch = batch;
    return op;
}

Test(dev_sizes, op_check_rules)
{
    char why[512];
    plan_op ok = gemm_op(PLAN_OP_GROUPED_GEMM, 8, 16, 16, 4);
    cr_assert_eq(dev_op_check(&ok, "decode", why, sizeof(why)), 0, "%s", why);
    plan_op b0 = gemm_op(PLAN_OP_GROUPED_GEMM, 8, 16, 16, 0);
    cr_assert_eq(dev_op_check(&b0, "decode", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "batch=0"), "%s", why);
    cr_assert_not_null(strstr(why, "phase decode"), "%s", why);
    plan_op neg = gemm_op(PLAN_OP_GEMM, -1, 16, 16, 1);
    cr_assert_eq(dev_op_check(&neg, "decode", why, sizeof(why)), -1);
    plan_op wide = gemm_op(PLAN_OP_GEMM, 1, 1LL << 31, 16, 1);
    cr_assert_eq(dev_op_check(&wide, "decode", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "n=2147483648"), "%s", why);
    plan_op emb = gemm_op(PLAN_OP_EMBEDDING, 4, 16, 0, 1);
    cr_assert_eq(dev_op_check(&emb, "decode", why, sizeof(why)), -1);

    plan_op at;
    memset(&at, 0, sizeof(at));
    at.kind = PLAN_OP_ATTENTION;
    at.batch = 1, at.q_len = 2, at.kv_len = 16, at.heads = 8, at.kv_heads = 0, at.qk_dim = 8, at.v_dim = 8;
    cr_assert_eq(dev_op_check(&at, "decode", why, sizeof(why)), -1, "kv_heads 0");
    at.kv_heads = 3;
    cr_assert_eq(dev_op_check(&at, "decode", why, sizeof(why)), -1, "8 heads over 3 KV heads");
    at.kv_heads = 2;
    cr_assert_eq(dev_op_check(&at, "decode", why, sizeof(why)), 0, "%s", why);
    at.kv_shared = true;
    at.v_dim = 16;
    cr_assert_eq(dev_op_check(&at, "decode", why, sizeof(why)), -1, "shared cache, wider values");
}
