#include "th_json.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cfg_doc *th_json_of(th_result r)
{
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *path = th_write_temp(r.out, strlen(r.out), ".json");
    th_free(&r);
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(path, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    unlink(path);
    free(path);
    return doc;
}

double th_json_num(const cfg_node *n, const char *path)
{
    const cfg_node *v = cfg_node_at(n, path);
    cr_assert(v && v->kind == CFG_NODE_SCALAR, "no number '%s'", path);
    return atof(v->scalar);
}
