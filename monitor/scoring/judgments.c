/* The hash's key (see judgments.h): one for the whole module, so every C file that hashes ids,
   the run parser's too, uses the same seeded key. The module seeds it from os.urandom when it
   loads (monitor/_speedups.c). */
#include "judgments.h"

uint64_t rm_seed[2] = {0x9E3779B97F4A7C15ULL, 0};
