/* The parsed-file cache (cfg_doc_cache.c) and the schema's parsed defaults: a file rewritten with the same
 * size at once is read anew, a copy edited by its user leaves the next load untouched, errors are not
 * cached, and a scenario loaded twice binds the same values. */
#include "../../sim/config/cfg.h"
#include "../../sim/config/cfg_tree.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static const char *scalar_at(cfg_doc *d, const char *key)
{
    cfg_node *n = cfg_node_at(cfg_doc_root(d), key);
    cr_assert_not_null(n, "no %s", key);
    return n->scalar;
}

Test(cfg_cache, a_rewrite_of_the_same_size_at_once_is_read_anew)
{
    char path[] = "/tmp/vpsim-cache-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cfg_error err;
    write_text(path, "a: 1\nb: [x, y]\n");
    cfg_doc *d1 = cfg_doc_load_file_cached(path, &err);
    cr_assert_not_null(d1, "%s", err.msg);
    cr_assert_str_eq(scalar_at(d1, "a"), "1");
    /* Same length, within the same tick of the file clock: only the bytes tell them apart. */
    write_text(path, "a: 2\nb: [x, y]\n");
    cfg_doc *d2 = cfg_doc_load_file_cached(path, &err);
    cr_assert_not_null(d2, "%s", err.msg);
    cr_assert_str_eq(scalar_at(d2, "a"), "2", "a stale parse was served");
    /* The copy handed out is the caller's: editing it leaves the cache as it was. */
    cfg_node *a = cfg_node_at(cfg_doc_root(d2), "a");
    free(a->scalar);
    a->scalar = strdup("edited");
    cfg_doc *d3 = cfg_doc_load_file_cached(path, &err);
    cr_assert_str_eq(scalar_at(d3, "a"), "2");
    cr_assert_eq(cfg_node_at(cfg_doc_root(d3), "b")->n, 2);
    /* A file that becomes invalid is an error with its position, every time. */
    write_text(path, "a: [1\n");
    for (int i = 0; i < 2; i++) {
        cfg_doc *bad = cfg_doc_load_file_cached(path, &err);
        cr_assert_null(bad);
        cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    }
    cfg_doc_free(d1);
    cfg_doc_free(d2);
    cfg_doc_free(d3);
    unlink(path);
}

Test(cfg_cache, a_scenario_loaded_twice_binds_the_same_values_and_sets_apply_to_a_copy)
{
    const char *sets[] = {"parallel.tp=4", "system.gpu.mem_bw_gbs=1000"};
    cfg_scenario a, b, c;
    cfg_error err;
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), sets, 2, NULL, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), NULL, 0, NULL, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), sets, 2, NULL, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(a.parallel.tp, 4);
    cr_assert_eq(b.parallel.tp, 8, "an earlier --set must not stick to the cached scenario");
    cr_assert_float_eq(b.system.gpu.mem_bw_gbs, 1792.0, 1e-9, "nor to the cached system file");
    cr_assert_eq(c.parallel.tp, 4);
    cr_assert_float_eq(c.system.gpu.mem_bw_gbs, 1000.0, 1e-9);
    cr_assert_eq(a.target.layers, b.target.layers);
    cr_assert_str_eq(a.system.name, b.system.name);
    cfg_scenario_free(&a);
    cfg_scenario_free(&b);
    cfg_scenario_free(&c);
}
