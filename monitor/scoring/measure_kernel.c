/* See measure_kernel.h: the measures of one ranking of grade codes, as scoring/columns.py
   computes them. */
#include "measure_kernel.h"

#include <math.h>

static double ratio(double numerator, double denominator, double when_zero) {
    return denominator > 0 ? numerator / denominator : when_zero;
}

/* The DCG of the condensed list, to its k-th document (k < 0: all): the judged documents alone,
   in rank order, the i-th of them discounted as rank i. */
static double condensed_dcg(const rm_measure_plan *plan, const double *gain, const uint8_t *codes,
                            size_t taken, int64_t k) {
    size_t end = k < 0 ? taken : (size_t)k;
    double sum = 0.0;
    size_t rank = 0;
    for (size_t i = 0; i < taken && rank < end; i++) {
        if (plan->judged[codes[i]]) {
            sum += gain[codes[i]] / plan->discounts[rank];
            rank++;
        }
    }
    return sum;
}

/* The discount of rank i + 1: the caller's table within the head, past it log2(i + 2) from the
   C library, as numpy's table is made (monitor/scoring/columns.py `discounts`). */
static double discount(const rm_measure_plan *plan, size_t i) {
    return i < plan->head ? plan->discounts[i] : log2((double)i + 2.0);
}

/* The upper bound of nDCG@k (k >= 1): as columns.py `ndcg_upper`, sums in rank order. */
static double upper_ndcg(const rm_measure_plan *plan, size_t g, const uint8_t *codes,
                         size_t taken, int64_t k, size_t query) {
    const double *gain = plan->gains + g * RM_CODES;
    const double *top = plan->tops + (query * plan->n_gains + g) * plan->top_depth;
    double best = plan->top_depth ? top[0] : 0.0;
    size_t end = (uint64_t)k < taken ? (size_t)k : taken;
    if (end > plan->head) {
        end = plan->head;
    }
    double dcg = 0.0;
    size_t unjudged = 0;
    for (size_t i = 0; i < end; i++) {
        uint8_t code = codes[i];
        double value = gain[code];
        if (!plan->judged[code]) {
            value = best;
            unjudged++;
        }
        dcg += value / plan->discounts[i];
    }
    double ideal = 0.0;
    for (size_t i = 0; i < (size_t)k; i++) {
        double value = 0.0;
        if (i < unjudged) {
            value = best;
        } else if (i - unjudged < plan->top_depth) {
            value = top[i - unjudged];
        }
        ideal += value / discount(plan, i);
    }
    return ratio(dcg, ideal, plan->when_zero);
}

/* The sum of (relevant so far) / rank over the relevant documents of the first k ranks. */
static double cut_precision_sum(const rm_measure_plan *plan, const uint8_t *codes, size_t taken,
                                int64_t k) {
    size_t end = (uint64_t)k < taken ? (size_t)k : taken;
    double sum = 0.0;
    int64_t found = 0;
    for (size_t i = 0; i < end; i++) {
        if (plan->relevant[codes[i]]) {
            found++;
            sum += (double)found / (double)(i + 1);
        }
    }
    return sum;
}

void rm_measure_row(const rm_measure_plan *plan, rm_scratch *scratch, const uint8_t *codes,
                    size_t taken, int64_t length, size_t query, double *out) {
    size_t head = taken < plan->head ? taken : plan->head;
    /* Prefix sums over the head, as the numpy cumulative sums (padding adds 0). */
    for (size_t g = 0; g < plan->n_gains; g++) {
        const double *gain = plan->gains + g * RM_CODES;
        double *dcg = scratch->dcg + g * plan->head;
        double sum = 0.0;
        for (size_t i = 0; i < head; i++) {
            sum += gain[codes[i]] / plan->discounts[i];
            dcg[i] = sum;
        }
    }
    int64_t relevant = 0, judged = 0;
    for (size_t i = 0; i < head; i++) {
        relevant += plan->relevant[codes[i]];
        judged += plan->judged[codes[i]];
        scratch->rel[i] = relevant;
        scratch->judged[i] = judged;
    }
    /* Whole-ranking measures: the relevant documents of every code taken. */
    int64_t num_rel = plan->num_rel[query];
    double reciprocal = 0.0, precision_sum = 0.0;
    int64_t found = 0, within_num_rel = 0;
    for (size_t i = 0; i < taken; i++) {
        if (plan->relevant[codes[i]]) {
            found++;
            if (found == 1) {
                reciprocal = 1.0 / (double)(i + 1);
            }
            if ((int64_t)i < num_rel) {
                within_num_rel++;
            }
            precision_sum += (double)found / (double)(i + 1);
        }
    }
    for (size_t c = 0; c < plan->columns; c++) {
        int64_t k = plan->cutoffs[c];
        size_t at = k < 0 || (uint64_t)k > head ? head : (size_t)k; /* ranks read */
        double value = 0.0;
        switch (plan->kinds[c]) {
        case RM_NDCG:
        case RM_DCG: {
            double dcg = at ? scratch->dcg[(size_t)plan->gain_of[c] * plan->head + at - 1] : 0.0;
            if (plan->kinds[c] == RM_DCG) {
                value = dcg;
            } else {
                double ideal = plan->ideals[query * plan->n_ideals + (size_t)plan->ideal_of[c]];
                value = ratio(dcg, ideal, plan->when_zero);
            }
            break;
        }
        case RM_NDCG_CONDENSED: {
            const double *gain = plan->gains + (size_t)plan->gain_of[c] * RM_CODES;
            double ideal = plan->ideals[query * plan->n_ideals + (size_t)plan->ideal_of[c]];
            value = ratio(condensed_dcg(plan, gain, codes, taken, k), ideal, plan->when_zero);
            break;
        }
        case RM_NDCG_UPPER:
            value = upper_ndcg(plan, (size_t)plan->gain_of[c], codes, taken, k, query);
            break;
        case RM_PRECISION:
            value = (double)(at ? scratch->rel[at - 1] : 0) / (double)k;
            break;
        case RM_RECALL:
            value = ratio((double)(at ? scratch->rel[at - 1] : 0), (double)num_rel, 0.0);
            break;
        case RM_JUDGED: {
            int64_t shown = length < k ? length : k;
            value = ratio((double)(at ? scratch->judged[at - 1] : 0), (double)shown, 0.0);
            break;
        }
        case RM_MRR:
            value = reciprocal;
            break;
        case RM_MAP:
            value = ratio(precision_sum, (double)num_rel, 0.0);
            break;
        case RM_MAP_CUT:
            value = ratio(cut_precision_sum(plan, codes, taken, k), (double)num_rel, 0.0);
            break;
        case RM_SUCCESS:
            value = (at ? scratch->rel[at - 1] : 0) > 0 ? 1.0 : 0.0;
            break;
        case RM_RPREC:
            value = ratio((double)within_num_rel, (double)num_rel, 0.0);
            break;
        case RM_NUM_RET:
            value = (double)length;
            break;
        case RM_NUM_REL:
            value = (double)num_rel;
            break;
        case RM_NUM_REL_RET:
            value = (double)found;
            break;
        default:
            value = 0.0;
        }
        out[c] = value;
    }
}

void rm_ideal_row(const rm_ideal_plan *plan, const uint8_t *codes, size_t n, double *sums,
                  uint32_t *counts, double *ideal, int64_t *num_rel) {
    int64_t relevant = 0;
    for (size_t i = 0; i < n; i++) {
        relevant += plan->relevant[codes[i]];
        counts[codes[i]]++;
    }
    *num_rel = relevant;
    /* Each gain rule's gains highest first: its codes in gain order, each as often as it
       occurs (a counting sort: the same sequence of values as numpy's sort), then the running
       sum of gain / discount. Once per gain rule, however many columns use it. */
    for (size_t g = 0; g < plan->n_gains; g++) {
        int used = 0;
        for (size_t s = 0; s < plan->n_specs && !used; s++) {
            used = (size_t)plan->spec_gain[s] == g;
        }
        if (!used) {
            continue;
        }
        const double *gain = plan->gains + g * RM_CODES;
        const uint8_t *order = plan->order + g * RM_CODES;
        double *row = sums + g * n, sum = 0.0;
        size_t i = 0;
        for (size_t o = 0; o < plan->n_codes && i < n; o++) {
            uint8_t code = order[o];
            double value = gain[code];
            for (uint32_t c = counts[code]; c > 0; c--, i++) {
                sum += value / plan->discounts[i];
                row[i] = sum;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        counts[codes[i]] = 0;
    }
    for (size_t s = 0; s < plan->n_specs; s++) {
        const double *row = sums + (size_t)plan->spec_gain[s] * n;
        int64_t k = plan->spec_cutoff[s];
        size_t end = k < 0 || (uint64_t)k > n ? n : (size_t)k;
        ideal[s] = end ? row[end - 1] : 0.0;
    }
}
