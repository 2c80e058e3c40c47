/* vpsim-kernel-tests: command line and driver. Exit status: 0 all cases passed, 1 a validation failed,
 * 2 a CUDA error or bad usage. */
#include "kt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const families[] = {"attention", "rmsnorm", "silu_mul", "axpby", "embedding", "fill", "check",
                                       "delay", "allreduce_norm_oneshot", "allreduce_norm_push",
                                       "residual_rmsnorm", "links", "probe", "all", NULL};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vpsim-kernel-tests [options]\n"
            "  --kernel NAME       attention | rmsnorm | silu_mul | axpby | embedding | fill | check | delay |\n"
            "                      allreduce_norm_oneshot | allreduce_norm_push | residual_rmsnorm | links | all\n"
            "                      (default all), or probe: attention launch-floor timings (not in all)\n"
            "  --case SUBSTR       only cases whose name contains SUBSTR\n"
            "  --iters N           timed runs per case (default 50)\n"
            "  --warmup N          untimed runs before timing (default 3)\n"
            "  --no-bench          validate only, print no timings\n"
            "  --quick             skip the largest cases (MLA 128K context, 4096-row norms)\n"
            "  --smem-budget BYTES cap attention's shared memory per block (101376 = sm_120's 99 KB)\n"
            "  --attn-stages N     force attention's pipeline depth (2..4; default automatic)\n"
            "  --attn-splits N     force attention's number of KV splits (1..1024; default automatic)\n"
            "  --attn-tile N       force attention's keys per shared-memory tile (16, 32, 64; default automatic)\n"
            "  --flush MODE        L2 flush before each timed run: dirty (a buffer 4x the L2 written, default)\n"
            "                      or clean (read: no dirty lines for the op to write back)\n"
            "  --attn-kernel N     attention split kernel: 1 (general), 2 (the MLA kernel where it applies),\n"
            "                      3 (the wgmma MLA kernel where it applies: sm_90a, else as 2)\n"
            "  --attn-sweep LIST   attention settings TILE:STAGES:SPLITS[:KERNEL],... (0 = automatic), each validated and\n"
            "                      timed against one CPU reference per case (at most 32)\n"
            "  --seed N            seed of the random inputs (default 1234)\n"
            "  --device N          CUDA device (default 0)\n"
            "  --help\n"
            "One line per case: kernel= case= shape= ok= max_err= median_us= p10_us= p90_us= gbps= info=\n");
}

static long long parse_int(const char *opt, const char *s, long long lo)
{
    char *end;
    const long long v = strtoll(s, &end, 0);
    if (*s == '\0' || *end != '\0' || v < lo) {
        fprintf(stderr, "vpsim-kernel-tests: %s wants an integer >= %lld, got '%s'\n", opt, lo, s);
        exit(2);
    }
    return v;
}

/* "T:S:N[:K],..." -> o->attn_cfg; each value checked as the setters check it. */
static int parse_sweep(const char *s, kt_opts *o)
{
    o->attn_n = 0;
    while (*s) {
        int t, st, sp, kn = 0, used = 0, used4 = 0;
        const int n = sscanf(s, "%d:%d:%d%n:%d%n", &t, &st, &sp, &used, &kn, &used4);
        if (n == 4)
            used = used4;
        if (o->attn_n == 32 || n < 3 || (t != 0 && t != 16 && t != 32 && t != 64) ||
            (st != 0 && (st < 2 || st > 4)) || sp < 0 || sp > 1024 || kn < 0 || kn > 3) {
            fprintf(stderr, "vpsim-kernel-tests: --attn-sweep wants TILE:STAGES:SPLITS[:KERNEL],... (tile 0|16|32|64, "
                            "stages 0|2..4, splits 0..1024, kernel 0..3, at most 32), got '%s'\n", s);
            return 2;
        }
        int *c = o->attn_cfg[o->attn_n++];
        c[0] = t, c[1] = st, c[2] = sp, c[3] = kn;
        s += used;
        if (*s == ',')
            s++;
        else if (*s) {
            fprintf(stderr, "vpsim-kernel-tests: --attn-sweep: unexpected '%s'\n", s);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    kt_opts o = {.iters = 50, .warmup = 3, .bench = 1, .seed = 1234};
    int device = 0, stages = 0, splits = 0, tile = 0, kernel = 0;
    enum { OPT_KERNEL = 256, OPT_CASE, OPT_ITERS, OPT_WARMUP, OPT_NO_BENCH, OPT_QUICK, OPT_SMEM, OPT_STAGES, OPT_SPLITS, OPT_TILE, OPT_KERNEL_ATTN, OPT_SWEEP, OPT_FLUSH, OPT_SEED, OPT_DEVICE,
           OPT_HELP };
    static const struct option long_opts[] = {
        {"kernel", required_argument, NULL, OPT_KERNEL},
        {"case", required_argument, NULL, OPT_CASE},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"no-bench", no_argument, NULL, OPT_NO_BENCH},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"smem-budget", required_argument, NULL, OPT_SMEM},
        {"attn-stages", required_argument, NULL, OPT_STAGES},
        {"attn-splits", required_argument, NULL, OPT_SPLITS},
        {"attn-tile", required_argument, NULL, OPT_TILE},
        {"attn-kernel", required_argument, NULL, OPT_KERNEL_ATTN},
        {"attn-sweep", required_argument, NULL, OPT_SWEEP},
        {"flush", required_argument, NULL, OPT_FLUSH},
        {"seed", required_argument, NULL, OPT_SEED},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_KERNEL:
            o.kernel = optarg;
            break;
        case OPT_CASE:
            o.filter = optarg;
            break;
        case OPT_ITERS:
            o.iters = (int)parse_int("--iters", optarg, 1);
            break;
        case OPT_WARMUP:
            o.warmup = (int)parse_int("--warmup", optarg, 0);
            break;
        case OPT_NO_BENCH:
            o.bench = 0;
            break;
        case OPT_QUICK:
            o.quick = 1;
            break;
        case OPT_SMEM:
            vp_attention_set_smem_budget((size_t)parse_int("--smem-budget", optarg, 0));
            break;
        case OPT_STAGES:
            stages = (int)parse_int("--attn-stages", optarg, 2);
            break;
        case OPT_SPLITS:
            splits = (int)parse_int("--attn-splits", optarg, 1);
            break;
        case OPT_TILE:
            tile = (int)parse_int("--attn-tile", optarg, 16);
            break;
        case OPT_KERNEL_ATTN:
            kernel = (int)parse_int("--attn-kernel", optarg, 1);
            break;
        case OPT_FLUSH:
            if (strcmp(optarg, "clean") != 0 && strcmp(optarg, "dirty") != 0) {
                fprintf(stderr, "vpsim-kernel-tests: --flush wants clean or dirty, got '%s'\n", optarg);
                return 2;
            }
            o.flush_clean = strcmp(optarg, "clean") == 0;
            break;
        case OPT_SWEEP:
            if (parse_sweep(optarg, &o) != 0)
                return 2;
            break;
        case OPT_SEED:
            o.seed = (unsigned long long)parse_int("--seed", optarg, 0);
            break;
        case OPT_DEVICE:
            device = (int)parse_int("--device", optarg, 0);
            break;
        case OPT_HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "vpsim-kernel-tests: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (o.kernel) {
        int known = 0;
        for (int i = 0; families[i]; i++)
            known |= strcmp(families[i], o.kernel) == 0;
        if (!known) {
            fprintf(stderr, "vpsim-kernel-tests: unknown --kernel '%s'\n", o.kernel);
            usage(stderr);
            return 2;
        }
    }

    if (o.attn_n == 0) {
        o.attn_n = 1;
        o.attn_cfg[0][0] = tile, o.attn_cfg[0][1] = stages, o.attn_cfg[0][2] = splits, o.attn_cfg[0][3] = kernel;
    }
    if (vp_attention_set_tuning(stages, splits) != 0 || vp_attention_set_tile(tile) != 0 ||
        vp_attention_set_kernel(kernel) != 0) {
        fprintf(stderr, "vpsim-kernel-tests: --attn-stages wants 2..4, --attn-splits 1..1024, --attn-tile 16, 32 or 64, "
                        "--attn-kernel 1, 2 or 3\n");
        return 2;
    }
    CUDA_CHECK(cudaSetDevice(device));
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int runtime = 0, driver = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    printf("# device=%d name=\"%s\" sm=%d%d sms=%d l2_mb=%.0f smem_optin_kb=%zu runtime=%d driver=%d iters=%d\n", device,
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0,
           prop.sharedMemPerBlockOptin / 1024, runtime, driver, o.bench ? o.iters : 0);
    CUDA_CHECK(cudaStreamCreateWithFlags(&kt_stream, cudaStreamNonBlocking));

    kt_run_attention(&o);
    kt_run_ops(&o);
    kt_run_fill(&o);
    kt_run_fused(&o);
    kt_run_links(&o);
    kt_run_probe(&o);

    CUDA_CHECK(cudaStreamDestroy(kt_stream));
    printf("# cases=%d failures=%d\n", kt_cases, kt_failures);
    if (kt_cases == 0) {
        fprintf(stderr, "vpsim-kernel-tests: no case matched --kernel / --case\n");
        return 2;
    }
    return kt_failures ? 1 : 0;
}
