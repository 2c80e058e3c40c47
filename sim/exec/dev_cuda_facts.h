/* dev_cuda_facts: the CUDA device's exec_facts (exec.h), read from the runtime and NVML without a
 * context of the executor. */
#ifndef VPSIM_DEV_CUDA_FACTS_H
#define VPSIM_DEV_CUDA_FACTS_H

#include "exec.h"

void dev_cuda_facts(int local_rank, exec_facts *f);

#endif
