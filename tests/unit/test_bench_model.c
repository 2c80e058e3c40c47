/* bench-allreduce against the model: --model on a measurement (CPU device, MPI backend) and --from on a
 * saved result, with clear errors for files that are not one. */
#include "../../sim/config/cfg_tree.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bin(void)
{
    const char *b = getenv("VPSIM_BIN");
    return b ? b : "build/vpsim";
}

/* Every row of every backend in a bench JSON carries model_us (a positive number) and an error that
 * agrees with it; returns the number of rows. */
static int assert_modelled(const char *path, const char *system)
{
    cfg_error err;
    cfg_doc *d = cfg_doc_load_file(path, &err);
    cr_assert_not_null(d, "%s", err.msg);
    cfg_node *root = cfg_doc_root(d);
    cr_assert_str_eq(cfg_node_at(root, "model.system")->scalar, system);
    cfg_node *bes = cfg_map_get(root, "backends");
    int rows = 0;
    for (size_t k = 0; k < bes->n; k++) {
        cfg_node *b = bes->items[k];
        cr_assert(strlen(cfg_map_get(b, "model_method")->scalar) > 0);
        cfg_node *rs = cfg_map_get(b, "rows");
        for (size_t i = 0; i < rs->n; i++, rows++) {
            double t = strtod(cfg_map_get(rs->items[i], "time_us")->scalar, NULL);
            double m = strtod(cfg_map_get(rs->items[i], "model_us")->scalar, NULL);
            double e = strtod(cfg_map_get(rs->items[i], "model_error_pct")->scalar, NULL);
            cr_assert(m > 0 && isfinite(m), "model_us %f", m);
            cr_assert_float_eq(e, 100.0 * (m - t) / t, 1e-6 * fabs(e) + 1e-9);
        }
    }
    cfg_doc_free(d);
    return rows;
}

Test(bench_model, a_measurement_and_its_saved_copy_compare_with_the_model, .timeout = 150)
{
    char dir[] = "/tmp/vpsim-bm-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_sh(TH_MPIRUN " -np 2 '%s' bench-allreduce --device cpu --backend mpi --sizes 1K,64K -n 3 -w 1 "
                               "--system configs/systems/rtx-pro-6000-8x-pcie.yaml --model --format json --out %s/m.json",
                        bin(), dir);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);
    char path[600];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    cr_assert_eq(assert_modelled(path, "rtx-pro-6000-8x-pcie"), 2);

    /* The saved copy against another system: the measurement stays, the model changes. */
    r = th_run("bench-allreduce --from %s --system configs/systems/h200-2x-nvlink.yaml --format json --out %s/h.json",
               path, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    snprintf(path, sizeof(path), "%s/h.json", dir);
    cr_assert_eq(assert_modelled(path, "h200-2x-nvlink"), 2);
    cfg_error err;
    cfg_doc *d = cfg_doc_load_file(path, &err);
    cr_assert(strstr(cfg_node_at(cfg_doc_root(d), "command")->scalar, "--model") != NULL,
              "the measuring command is kept");
    cr_assert_not_null(cfg_node_at(cfg_doc_root(d), "compare_command"));
    cfg_doc_free(d);

    /* The table: model and error columns, the measuring command named. */
    r = th_run("bench-allreduce --from %s --system configs/systems/h200-2x-nvlink.yaml", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "     model     error") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "# measured by: ") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "# model: formula: host-staged MPI") != NULL, "%s", r.out);
    th_free(&r);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(bench_model, from_refuses_what_is_not_a_saved_result)
{
    const char *bad[][2] = {
        {"{\"schema\": \"vpsim.results/1\"}\n", "not a vpsim bench-allreduce result"},
        {"{\"schema\": \"vpsim.bench_allreduce/1\", \"command\": \"x\"}\n", "missing required key 'ranks'"},
        {"{\"schema\": \"vpsim.bench_allreduce/1\", \"command\": \"x\", \"ranks\": \"two\"}\n", "ranks: expected an integer, got 'two'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *f = th_write_temp(bad[i][0], strlen(bad[i][0]), ".json");
        th_result r = th_run("bench-allreduce --from %s", f);
        cr_assert_eq(r.status, 2, "%s: exit %d\n%s", bad[i][0], r.status, r.err);
        cr_assert(strstr(r.err, bad[i][1]) != NULL, "want '%s' in:\n%s", bad[i][1], r.err);
        cr_assert(strstr(r.err, f) != NULL && strstr(r.err, ":1:") != NULL, "file:line:col expected:\n%s", r.err);
        th_free(&r);
        remove(f);
        free(f);
    }
    th_result r = th_run("bench-allreduce --from /nonexistent/x.json");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "/nonexistent/x.json") != NULL, "%s", r.err);
    th_free(&r);
}
