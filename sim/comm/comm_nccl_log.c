/* Reading NCCL's INFO log (comm_nccl_log.h). The lines, as NCCL 2.2x writes them:
 *   "NCCL INFO NCCL version 2.28.3+cuda12.9"                          (init.cc)
 *   "NCCL INFO Channel 00/02 :    0   1   2 ..."                       (the ring order, per channel)
 *   "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct"      (transport.cc, per connection)
 *   "NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw 0.100000/0.100000, type SYS/SYS, sameChannels 1"
 *   "NCCL INFO Could not find a path for pattern 4, falling back to simple order"      (search.cc) */
#include "comm_nccl_log.h"

#include <stdio.h>
#include <string.h>

static void parse_line(const char *l, comm_nccl_log *o, bool *any)
{
    const char *p;
    if ((p = strstr(l, "NCCL version "))) {
        char v[24] = "";
        if (sscanf(p + 13, "%23[0-9.]", v) == 1) {
            snprintf(o->version, sizeof(o->version), "%s", v);
            *any = true;
        }
    }
    if ((p = strstr(l, "Channel "))) {
        int a, b;
        if (sscanf(p + 8, "%d/%d", &a, &b) == 2 && b > o->channels && !strstr(p, "->")) {
            o->channels = b; /* the ring-order lines: "Channel 00/02 :" */
            *any = true;
        }
        const char *via = strstr(p, " via ");
        if (via && strstr(p, "->")) {
            via += 5;
            if (!strncmp(via, "P2P", 3))
                o->p2p++;
            else if (!strncmp(via, "SHM", 3))
                o->shm++;
            else if (!strncmp(via, "NET", 3))
                o->net++;
            *any = true;
        }
    }
    if ((p = strstr(l, "Pattern "))) {
        comm_nccl_log g = *o;
        if (sscanf(p, "Pattern %d, crossNic %*d, nChannels %d, bw %lf/%lf, type %7[A-Z0-9]/%7[A-Z0-9]", &g.pattern,
                   &g.search_channels, &g.bw_intra, &g.bw_inter, g.type_intra, g.type_inter) == 6 &&
            (!o->searched || g.pattern == 4)) { /* the ring's graph (pattern 4) over the trees' */
            g.searched = true;
            *o = g;
            *any = true;
        }
    }
    if (strstr(l, "falling back to simple order")) {
        o->fallback = true;
        *any = true;
    }
}

bool comm_nccl_log_parse(const char *text, comm_nccl_log *out)
{
    memset(out, 0, sizeof(*out));
    bool any = false;
    char line[1024];
    for (const char *s = text; s && *s;) {
        const char *e = strchr(s, '\n');
        const size_t n = e ? (size_t)(e - s) : strlen(s);
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), s);
        parse_line(line, out, &any);
        s = e ? e + 1 : NULL;
    }
    return any;
}
