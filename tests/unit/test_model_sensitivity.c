/* model_sensitivity and the provenance tags it prints: the ranking re-evaluates the model honestly
 * (each end equals a --set run of the moved value), ranks by swing, leaves out what does not matter, and
 * names each value's tag from the comment beside it. */
#include "../../sim/config/cfg_provenance.h"
#include "../../sim/model/model.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double tok_per_s(const char *const *sets, int n_sets, cfg_backend be)
{
    return th_model_cycle(sets, n_sets, be, NULL, NULL).tok_per_s;
}

static const model_sens_item *find(const model_sens_item *it, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(it[i].key, key) == 0)
            return &it[i];
    return NULL;
}

Test(model_sensitivity, each_end_is_the_model_rerun_with_that_value_set)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    model_sens_item it[64];
    const int n = model_sensitivity(&sc, &p, CFG_BACKEND_ONESHOT, 0.2, it, 64);
    cr_assert_gt(n, 3);
    /* On the target the platform stages one-shot's peer loads through system memory (peer_loads staged):
     * the shared system-memory rate is what its formula reads. */
    const model_sens_item *sock = find(it, n, "system.links.sysmem_load_gbs");
    cr_assert_not_null(sock, "the oneshot formula reads the staged path's rate");
    char lo[64], hi[64];
    snprintf(lo, sizeof(lo), "system.links.sysmem_load_gbs=%.17g", sock->lo_value);
    snprintf(hi, sizeof(hi), "system.links.sysmem_load_gbs=%.17g", sock->hi_value);
    cr_assert_float_eq(sock->lo_value, 0.8 * sock->value, 1e-9);
    const char *s_lo[] = {lo}, *s_hi[] = {hi};
    cr_assert_float_eq(sock->lo_tok_per_s, tok_per_s(s_lo, 1, CFG_BACKEND_ONESHOT), 1e-9);
    cr_assert_float_eq(sock->hi_tok_per_s, tok_per_s(s_hi, 1, CFG_BACKEND_ONESHOT), 1e-9);
    cr_assert_float_eq(sock->base_tok_per_s, tok_per_s(NULL, 0, CFG_BACKEND_ONESHOT), 1e-9);
    /* A slower path can only slow the cycle down. */
    cr_assert_lt(sock->lo_tok_per_s, sock->base_tok_per_s);
    for (int i = 1; i < n; i++)
        cr_assert_geq(it[i - 1].swing, it[i].swing, "ranked by swing, largest first");
    th_plan_done(&sc, &p);
}

Test(model_sensitivity, leaves_out_what_the_answer_does_not_read_and_clamps_to_range)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    model_sens_item it[128];
    const int n = model_sensitivity(&sc, &p, CFG_BACKEND_NCCL, 0.2, it, 128);
    /* A PCIe box: NVLink figures cannot matter; the measured 200 us decides NCCL's figure, so NCCL's
     * own tuning inputs do not either. */
    cr_assert_null(find(it, n, "system.links.nvlink_gbs"));
    cr_assert_null(find(it, n, "system.nccl.pci_bw_gbs"));
    const model_sens_item *ar = find(it, n, "system.measured.allreduce.nccl.us");
    cr_assert_not_null(ar);
    cr_assert_str_eq(ar->tag, "measured");
    cr_assert_eq(it[0].swing, ar->swing, "122 allreduces are 73%% of the cycle: the measured figure leads");
    const model_sens_item *eff = find(it, n, "system.gpu.mem_efficiency");
    cr_assert_not_null(eff);
    cr_assert(eff->clamped, "0.95 x 1.2 is past the schema's maximum of 1");
    cr_assert_float_eq(eff->hi_value, 1.0, 1e-12);
    cr_assert_str_eq(eff->tag, "calibrated");
    const model_sens_item *acc = find(it, n, "speculative.acceptance");
    cr_assert_not_null(acc);
    cr_assert_str_eq(acc->tag, "assumed");
    cr_assert_gt(acc->hi_tok_per_s, acc->base_tok_per_s, "more acceptance, more tokens per cycle");
    /* none: no collective, so no link can matter. */
    const int m = model_sensitivity(&sc, &p, CFG_BACKEND_NONE, 0.2, it, 128);
    for (int i = 0; i < m; i++)
        cr_assert(strncmp(it[i].key, "system.links.", 13) != 0, "%s", it[i].key);
    th_plan_done(&sc, &p);
}

Test(cfg_provenance, tags_from_the_comment_beside_the_value)
{
    const char *yaml = "gpu:\n"
                       "  mem_bw_gbs: 1792   # spec: datasheet\n"
                       "  mem_efficiency: 0.9 # Assumed (a guess)\n"
                       "  l2_mb: 64\n"
                       "  sms: 132 # from a friend\n"
                       "measured:\n"
                       "  allreduce:\n"
                       "    nccl:\n"
                       "      us: [200, 300]   # measured: see source\n";
    char *path = th_write_temp(yaml, strlen(yaml), ".yaml");
    cfg_prov *p = cfg_prov_open(path);
    cr_assert_not_null(p);
    char tag[16], note[80];
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.mem_bw_gbs", 1792, tag, sizeof(tag), note, sizeof(note)), "spec");
    cr_assert_str_eq(note, "spec: datasheet");
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.mem_efficiency", 0.9, tag, sizeof(tag), NULL, 0), "assumed");
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.l2_mb", 64, tag, sizeof(tag), NULL, 0), "untagged");
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.sms", 132, tag, sizeof(tag), NULL, 0), "noted");
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.kernel_floor_us", 2.0, tag, sizeof(tag), NULL, 0), "default");
    cr_assert_str_eq(cfg_prov_lookup(p, "gpu.mem_bw_gbs", 1500, tag, sizeof(tag), NULL, 0), "--set");
    cr_assert_str_eq(cfg_prov_lookup(p, "measured.allreduce.nccl.us", 200, tag, sizeof(tag), NULL, 0), "measured");
    cfg_prov_close(p);
    cr_assert_null(cfg_prov_open("/nonexistent/system.yaml"));
    cr_assert_str_eq(cfg_prov_lookup(NULL, "gpu.sms", 1, tag, sizeof(tag), NULL, 0), "unknown");
    unlink(path);
    free(path);
}

/* The phase lines of `model --explain` add up to the cycle they explain. */
static void check_phases_sum(const char *text, const char *backend)
{
    char head[64];
    snprintf(head, sizeof(head), "the cycle with %s: ", backend);
    const char *at = strstr(text, head);
    cr_assert_not_null(at, "no cycle section for %s", backend);
    double cycle = 0, sum = 0;
    cr_assert_eq(sscanf(at + strlen(head), "%lf ms", &cycle), 1);
    const char *line = strchr(at, '\n') + 1;
    while (*line == ' ' && line[2] != ' ') { /* phase lines: two spaces, then a name */
        char name[64];
        double ms;
        cr_assert_eq(sscanf(line, "%63s %lf ms", name, &ms), 2, "%.80s", line);
        sum += ms;
        line = strchr(line, '\n') + 1;
        while (strncmp(line, "        ", 8) == 0) /* that phase's largest ops */
            line = strchr(line, '\n') + 1;
    }
    cr_assert_float_eq(sum, cycle, 0.003, "%s: phases %.3f ms vs cycle %.3f ms", backend, sum, cycle);
}

Test(model_explain, whole_cycle_sensitivity_and_uncut_sources)
{
    th_result r = th_run("model configs/default.yaml --backend nccl,oneshot --explain");
    cr_assert_eq(r.status, 0, "%s", r.err);
    check_phases_sum(r.out, "nccl");
    check_phases_sum(r.out, "oneshot");
    cr_assert(strstr(r.out, "allreduce.attn               61 x   200.00 us"), "the largest verify op, with its count");
    cr_assert(strstr(r.out, "what the answer rests on"));
    cr_assert(strstr(r.out, "system.measured.allreduce.nccl.us"));
    /* The measured table's source is printed whole (the shipped text ends with "(public claim)"). */
    cr_assert(strstr(r.out, "(public claim)"), "source text cut");
    th_free(&r);
}
