/* The measures of rankings given as one-byte grade codes: the C twin of
 * the kinds of monitor/scoring/columns.py that have a `code` in the catalog's table (the numpy
 * functions stay the path without the accelerators, and compute the kinds without a case).
 *
 * Every value is computed with the same floating-point operations, in the same order, as the
 * numpy columns (division, then a running sum in rank order), so the two agree bit for bit:
 * DCG@k = sum over ranks i < k of gain[code_i] / discount[i] (discount[i] = log2(i + 2), the
 * caller's table, made by numpy), nDCG = DCG / IDCG (or `when_zero` if IDCG is 0), P@k =
 * relevant in the first k / k, recall@k = relevant in the first k / num_rel (0 if num_rel is 0),
 * judged@k = judged in the first k / min(length, k), RR = 1 / rank of the first relevant,
 * AP = sum over relevant ranks r of (relevant so far) / r, over num_rel (AP@k: r <= k),
 * success@k = 1 if a relevant document is in the first k, R-precision = relevant in the first
 * num_rel / num_rel, condensed nDCG@k = the DCG of the judged documents alone (the i-th judged
 * one discounted as rank i), up to the k-th, over IDCG@k; the upper bound of nDCG@k = the DCG
 * of the first k with each unjudged document gaining `best` (the query's highest gain), over
 * the ideal DCG of `best` u times (u: the unjudged documents among them) followed by the
 * query's highest gains (`tops`), cut at k.
 *
 * A kind has a case here only where a bench shows a material win over its numpy function
 * (which computes the kinds without one on this path too). ndcg_condensed, bench/metrics.py's
 * streaming path with k = 5,10,20 and linear and exp gain (27 measures): 6.06 us per ranking
 * with its columns from numpy (an argsort and a running sum over the whole ranking), 3.34 with
 * this case; 3.02 for the 21 measures before the kind existed. ndcg_upper, bench/bounds.py
 * (20,000 rankings of 20 documents, 20 % unjudged, the 33 monitor measures, scoring alone):
 * 4.08 us per ranking with its columns from numpy, 0.79 with this case, 0.48 for the 27
 * measures without it.
 */
#ifndef RANKMON_MEASURE_KERNEL_H
#define RANKMON_MEASURE_KERNEL_H

#include <stddef.h>
#include <stdint.h>

enum {
    RM_NDCG = 0,
    RM_DCG = 1,
    RM_PRECISION = 2,
    RM_RECALL = 3,
    RM_JUDGED = 4,
    RM_MRR = 5,
    RM_MAP = 6,
    RM_NUM_RET = 7,
    RM_NUM_REL = 8,
    RM_NUM_REL_RET = 9,
    RM_SUCCESS = 10,
    RM_RPREC = 11,
    RM_MAP_CUT = 12,
    RM_NDCG_CONDENSED = 13,
    RM_NDCG_UPPER = 14,
    RM_NDCG_LOWER = 15,
    RM_KINDS = 16
};

#define RM_CODES 256

typedef struct {
    size_t columns;
    const int32_t *kinds;   /* per column: RM_NDCG .. RM_NDCG_UPPER */
    const int32_t *gain_of; /* per column: row of `gains` (nDCG, DCG) */
    const int64_t *cutoffs; /* per column: k, or -1 for the whole head */
    const int32_t *ideal_of; /* per column: column of `ideals` (nDCG) */
    size_t n_gains;
    const double *gains;     /* n_gains x RM_CODES: gain of each code under each gain rule */
    const uint8_t *relevant; /* RM_CODES flags */
    const uint8_t *judged;   /* RM_CODES flags */
    const double *discounts; /* head entries: log2(rank + 1) for ranks 1..head */
    size_t head;             /* ranks the cutoff measures read (numpy's head width) */
    const double *ideals;    /* queries x n_ideals */
    size_t n_ideals;
    const int64_t *num_rel; /* per query */
    double when_zero;       /* nDCG of a query whose IDCG is 0: 0 or NaN */
    const double *tops;     /* queries x n_gains x top_depth: highest gains, highest first */
    size_t top_depth;       /* 0: no RM_NDCG_UPPER or RM_NDCG_LOWER column */
    const double *levels;   /* n_gains x RM_CODES: the scale's gains, highest first */
    const int32_t *n_levels; /* per gain rule: entries of its `levels` row */
} rm_measure_plan;

/* Scratch for one ranking: prefix sums over the head. */
typedef struct {
    double *dcg;     /* n_gains x head */
    int64_t *rel;    /* head */
    int64_t *judged; /* head */
    /* The bounds of nDCG@k (k <= top_depth = K; tiers: the scale's gains and the query's
       other judged gains, T <= RM_CODES + K of them); NULL without them. */
    double *filled;   /* K */
    double *extra;    /* K */
    double *by_rank;  /* K + 1 */
    double *after;    /* K + 1 */
    double *here;     /* K + 1 */
    double *tiers;    /* T */
    size_t *unjudged; /* K */
    size_t *chosen;   /* T x (K + 1) */
    size_t *counts;   /* T */
    size_t *best;     /* T */
    size_t *above;    /* T */
    size_t *at;       /* T */
    uint8_t *assignable; /* T */
    double *place;    /* K + 1: prefix sums of 1 / discount(i), the same for every ranking */
    double *weights;  /* head: 1 / discounts[i] */
    /* Both bounds of each (gain, k) once computed in the row: its lower and upper columns. */
    size_t memos;
    size_t *memo_g;      /* columns */
    int64_t *memo_k;     /* columns */
    double *memo_value;  /* 2 x columns: lower, upper */
} rm_scratch;

/* The scratch of the bounds for cutoffs up to `plan->top_depth` (0: none), in one allocation
   (`malloc`; free `filled`), with the tables every ranking shares. Returns -1 when out of
   memory. */
int rm_bounds_scratch(rm_scratch *scratch, const rm_measure_plan *plan);

/* One ranking's row of `plan->columns` values. `codes` has `taken` entries (the ranking's first
   documents, maybe fewer than `length`, its full length); `query` indexes ideals/num_rel. */
void rm_measure_row(const rm_measure_plan *plan, rm_scratch *scratch, const uint8_t *codes,
                    size_t taken, int64_t length, size_t query, double *out);

/* What rm_ideal_row needs: per IDCG column its gain rule (a row of `gains`) and cutoff, and
   per gain rule the codes in order of their gain, highest first. */
typedef struct {
    size_t n_specs;
    const int32_t *spec_gain;   /* per column: row of `gains`, below n_gains */
    const int64_t *spec_cutoff; /* per column: k, or -1 for every judged grade */
    size_t n_gains;
    const double *gains;        /* n_gains x RM_CODES */
    const uint8_t *order;       /* n_gains x RM_CODES: codes by gain, highest first */
    size_t n_codes;             /* entries of each `order` row: every code in use */
    const uint8_t *relevant;    /* RM_CODES flags */
    const double *discounts;    /* at least as many as the longest list of codes */
} rm_ideal_plan;

/* One query's IDCG columns and num_rel from the codes of its judged grades >= 0, in any order
   (`codes`, n of them, each listed in `order`): as columns.py `_ideal_dcg_columns`, each gain
   rule's gains sorted highest first and summed as gain / discount in rank order up to the
   column's cutoff, so the values are numpy's bit for bit. `sums` has room for n_gains x n
   doubles; `counts` holds RM_CODES zeros, and does again on return. */
void rm_ideal_row(const rm_ideal_plan *plan, const uint8_t *codes, size_t n, double *sums,
                  uint32_t *counts, double *ideal, int64_t *num_rel);

#endif
