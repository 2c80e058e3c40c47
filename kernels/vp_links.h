/* C interface of the link probe's kernels (kernels/vp_links.cu), driven by sim/exec/exec_links_cuda.c and
 * tested by tests/gpu/kt_links.c. Launchers only enqueue (they never synchronise) and return a
 * cudaError_t as int. Results go to `res`, which the caller allocates in host-mapped memory so that it
 * can be read after the stream is synchronised without a copy.
 *
 * Timing inside the kernels uses %globaltimer (ns), so the launch and the other rank's start skew stay
 * out of a ping-pong or a pointer chase; bandwidth kernels are timed by the caller with events. */
#ifndef VPSIM_VP_LINKS_H
#define VPSIM_VP_LINKS_H

#ifdef __cplusplus
extern "C" {
#endif

#define VP_LINKS_MAX_TARGETS 16
#define VP_LINKS_THREADS 256

/* Result record of the single-thread kernels. */
typedef struct vp_links_res {
    unsigned long long ns;   /* timed span */
    unsigned long long aux;  /* chase: the node reached; ping-pong: the last flag value seen */
    unsigned int status;     /* 0 done, 1 a wait timed out */
    unsigned int pad;
} vp_links_res;

/* Targets of one bandwidth kernel: blocks are dealt round-robin over them. */
typedef struct vp_links_targets {
    void *p[VP_LINKS_MAX_TARGETS];
    int n;
} vp_links_targets;

/* One thread: `rounds` + 1 round trips; the initiator stores base + i into *send and waits until *recv
 * reaches it, the responder waits for base + i on *recv and stores it into *send. Round 1 is not timed
 * (it lines the two kernels up). Every wait gives up after timeout_ns without the value (status 1). */
int vp_links_pingpong(unsigned int *send, const unsigned int *recv, int initiator, unsigned int base, int rounds,
                      unsigned long long timeout_ns, vp_links_res *res, void *stream);

/* One thread walks `hops` nodes of a chain laid out as exec_links_internal.h says (node stride
 * node_bytes, the next index at byte line_off of each node), from node 0; res->aux = the node reached
 * (0 again for a single cycle of `hops` nodes), res->ns the walk's time. */
int vp_links_chase(const void *chain, int hops, long long node_bytes, long long line_off, vp_links_res *res,
                   void *stream);

/* Store into every target bytes (a multiple of 16) of the pattern word i = i ^ seed (32-bit words), with
 * `blocks` blocks (rounded up to a multiple of the target count). */
int vp_links_store(vp_links_targets t, long long bytes, unsigned int seed, int blocks, void *stream);
/* Load bytes (a multiple of 16) of every target; the sum (mod 2^32) of all 32-bit words read is added to
 * *sink (device or host-mapped memory), which keeps the loads from being optimised away and lets a test
 * check that every word was read. */
int vp_links_load(vp_links_targets t, long long bytes, int blocks, unsigned int *sink, void *stream);

/* Launch-cost kernels: an empty one, one that writes its start time into stamps[i], one that spins ns. */
int vp_links_empty(void *stream);
int vp_links_stamp(unsigned long long *stamps, int i, void *stream);
int vp_links_spin(unsigned long long ns, void *stream);

#ifdef __cplusplus
}
#endif

#endif
