/* comm_nccl_log: what NCCL says it built, read from its own INFO log (NCCL_DEBUG=INFO,
 * NCCL_DEBUG_SUBSYS=INIT,GRAPH): its version, the channels it runs, the transport of each ring connection
 * this rank made, and its topology search's outcome. `vpsim probe` writes these into the system file, so
 * the model's transport and search rules (sim/model/model_nccl.c) can be held against NCCL itself.
 * Plain text parsing, no NCCL needed: CPU builds and the tests use it. */
#ifndef VPSIM_COMM_NCCL_LOG_H
#define VPSIM_COMM_NCCL_LOG_H

#include <stdbool.h>

typedef struct comm_nccl_log {
    char version[24];  /* "2.28.3" ("" when the log has no version line) */
    int channels;      /* "Channel 00/02 :" -> 2; 0 when none was logged */
    int p2p, shm, net; /* this rank's ring connections ("via P2P/...", "via SHM/...", "via NET/...") */
    bool searched;     /* a "Pattern N, crossNic ..., bw X/Y, type A/B" line was seen */
    int pattern, search_channels;
    double bw_intra, bw_inter;
    char type_intra[8], type_inter[8];
    bool fallback; /* "Could not find a path for pattern ..., falling back to simple order" */
} comm_nccl_log;

/* Parse `text` (a whole log file); returns whether anything of NCCL's was found. */
bool comm_nccl_log_parse(const char *text, comm_nccl_log *out);

#endif
