/* libFuzzer harness: the plan JSON loader (`--plan FILE`, a hand-editable file), then the devices'
 * shape rules and checked sizes on every op it accepts, so a plan that loads can never make a device
 * divide by zero or wrap a size; the phase structure every accepted plan must have (one decode phase,
 * or draft_1..draft_D, verify, draft_extend; no tokens per cycle above the target phase's); the check of
 * a plan against a scenario (configs/tiny.yaml); and the plan's CSV, every row as wide as its header. */
#include "../../sim/exec/dev_sizes.h"
#include "../../sim/plan/plan_json.h"
#include "../../sim/report/report.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What plan_json_load promises of the phases of any plan it accepts (plan_json.c check_phases). */
static void check_phases(const plan *p)
{
    int verify = 0, extend = 0, decode = 0, draft = 0;
    const plan_phase *target = NULL;
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        verify += ph->kind == PLAN_PHASE_VERIFY;
        extend += ph->kind == PLAN_PHASE_DRAFT_EXTEND;
        decode += ph->kind == PLAN_PHASE_DECODE;
        draft += ph->kind == PLAN_PHASE_DRAFT;
        if (ph->kind == PLAN_PHASE_VERIFY || ph->kind == PLAN_PHASE_DECODE)
            target = ph;
        if (ph->batch != p->batch)
            abort();
    }
    const bool spec = verify == 1 && extend == 1 && decode == 0 && p->phases[p->n_phases - 1].kind == PLAN_PHASE_DRAFT_EXTEND &&
                      p->phases[p->n_phases - 1].tokens == draft + 2;
    const bool plain = decode == 1 && p->n_phases == 1;
    if (!(spec || plain) || !target || p->expected_tokens > target->tokens)
        abort();
}

/* Fields in one CSV line, quotes as util_csv_field writes them (a quoted field may hold commas and line
 * breaks); *end is where the line ends. */
static int csv_fields(const char *s, const char **end)
{
    int n = 1;
    bool q = false;
    for (; *s && (q || *s != '\n'); s++) {
        if (*s == '"')
            q = !q;
        else if (*s == ',' && !q)
            n++;
    }
    *end = s;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cfg_scenario sc;
    static bool have_sc;
    if (!have_sc) {
        char path[512];
        cfg_error e;
        snprintf(path, sizeof(path), "%s/configs/tiny.yaml", FUZZ_ROOT);
        if (cfg_scenario_load(path, NULL, 0, NULL, &sc, &e) != 0)
            abort(); /* the harness, not the input, is broken */
        have_sc = true;
    }
    util_inputs_forget(); /* one command per input: the loader notes each file it reads */
    plan p;
    cfg_error err;
    if (plan_json_load(fuzz_memfd_path(data, size), &p, &err) != 0)
        return 0;
    check_phases(&p);
    char why[512];
    (void)plan_json_matches(&p, &sc, why, sizeof(why));
    for (int ph = 0; ph < p.n_phases; ph++)
        for (int i = 0; i < p.phases[ph].n_ops; i++) {
            const plan_op *op = &p.phases[ph].ops[i];
            if (dev_op_check(op, p.phases[ph].name, why, sizeof(why)) == 0) {
                dev_size s = dev_size_prod(op->m, op->n, op->k, op->batch);
                (void)dev_size_align(s, 256);
            }
        }
    util_buf csv = {0};
    report_plan_csv(&csv, &p);
    const char *line = csv.s, *end = NULL;
    const int width = csv_fields(line, &end);
    while (*end) {
        line = end + 1;
        if (*line && csv_fields(line, &end) != width)
            abort(); /* a name broke a row */
        if (!*line)
            break;
    }
    util_buf_free(&csv);
    plan_free(&p);
    return 0;
}
