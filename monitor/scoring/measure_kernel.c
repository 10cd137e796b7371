/* See measure_kernel.h: the measures of one ranking of grade codes, as scoring/columns.py
   computes them. */
#include "measure_kernel.h"

#include <math.h>
#include <stdlib.h>

#define RM_BOUND_STEPS 64 /* bounds.py MAX_STEPS */

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

int rm_bounds_scratch(rm_scratch *scratch, const rm_measure_plan *plan) {
    scratch->filled = NULL;
    if (!plan->top_depth) {
        return 0;
    }
    size_t k = plan->top_depth, t = RM_CODES + plan->top_depth;
    size_t memos = plan->columns;
    size_t doubles = 2 * k + 4 * (k + 1) + t + plan->head + 2 * memos;
    size_t sizes = k + t * (k + 1) + 4 * t + memos;
    size_t cutoffs = memos;
    char *block = malloc(sizeof(double) * doubles + sizeof(size_t) * sizes +
                         sizeof(int64_t) * cutoffs + t);
    if (block == NULL) {
        return -1;
    }
    double *d = (double *)block;
    scratch->filled = d;
    scratch->extra = d + k;
    scratch->by_rank = d + 2 * k;
    scratch->after = scratch->by_rank + k + 1;
    scratch->here = scratch->after + k + 1;
    scratch->place = scratch->here + k + 1;
    scratch->tiers = scratch->place + k + 1;
    scratch->weights = scratch->tiers + t;
    scratch->memo_value = scratch->weights + plan->head;
    size_t *z = (size_t *)(d + doubles);
    scratch->unjudged = z;
    scratch->chosen = z + k;
    scratch->counts = z + k + t * (k + 1);
    scratch->best = scratch->counts + t;
    scratch->above = scratch->best + t;
    scratch->at = scratch->above + t;
    scratch->memo_g = scratch->at + t;
    scratch->memo_k = (int64_t *)(z + sizes);
    scratch->assignable = (uint8_t *)(scratch->memo_k + cutoffs);
    scratch->memos = 0;
    /* What every ranking shares: the ideal's position weights summed, the ranks' weights. */
    scratch->place[0] = 0.0;
    for (size_t i = 0; i < k; i++) {
        scratch->place[i + 1] = scratch->place[i] + 1.0 / discount(plan, i);
    }
    for (size_t i = 0; i < plan->head; i++) {
        scratch->weights[i] = 1.0 / plan->discounts[i];
    }
    return 0;
}

/* The bounds of nDCG@k, as monitor/scoring/bounds.py computes them, step for step: same sums
   in the same order, for the same bits. */
typedef struct {
    const rm_measure_plan *plan;
    rm_scratch *s;
    const double *gain;   /* per code */
    const double *top;    /* the query's highest gains, top_depth of them */
    const double *levels; /* highest first */
    size_t n;             /* levels */
    size_t end;           /* ranks read: min(k, taken, head) */
    size_t k;
    size_t u;             /* unjudged ranks among them, in s->unjudged */
    size_t g;             /* the gain rule */
} rm_bound;

static size_t bound_setup(rm_bound *b, const rm_measure_plan *plan, rm_scratch *s, size_t g,
                          const uint8_t *codes, size_t taken, int64_t k, size_t query) {
    b->plan = plan;
    b->s = s;
    b->g = g;
    b->gain = plan->gains + g * RM_CODES;
    b->top = plan->tops + (query * plan->n_gains + g) * plan->top_depth;
    b->levels = plan->levels + g * RM_CODES;
    b->n = (size_t)plan->n_levels[g];
    b->k = (size_t)k;
    size_t end = b->k < taken ? b->k : taken;
    b->end = end > plan->head ? plan->head : end;
    b->u = 0;
    for (size_t i = 0; i < b->end; i++) {
        if (plan->judged[codes[i]]) {
            s->filled[i] = b->gain[codes[i]];
        } else {
            s->unjudged[b->u++] = i;
        }
    }
    return b->u;
}

/* nDCG@k with the unjudged ranks given `assigned` (rank order) and `extra` (the same gains,
   highest first), summed as nDCG@k: bounds.py `_ndcg`. */
static double bound_value(const rm_bound *b, const double *assigned, const double *extra) {
    const rm_measure_plan *plan = b->plan;
    double *filled = b->s->filled;
    for (size_t j = 0; j < b->u; j++) {
        filled[b->s->unjudged[j]] = assigned[j];
    }
    double dcg = 0.0;
    for (size_t i = 0; i < b->end; i++) {
        dcg += filled[i] / plan->discounts[i];
    }
    double ideal = 0.0;
    size_t t = 0, e = 0;
    for (size_t i = 0; i < b->k; i++) {
        double value;
        if (e < b->u && (t >= plan->top_depth || extra[e] > b->top[t])) {
            value = extra[e++];
        } else {
            value = t < plan->top_depth ? b->top[t] : 0.0;
            t++;
        }
        ideal += value / discount(plan, i);
    }
    return ratio(dcg, ideal, plan->when_zero);
}

/* Nothing to choose (no unjudged rank, or a scale of one gain): bounds.py `_filled`. */
static double bound_filled(const rm_bound *b) {
    double fill = b->n ? b->levels[0] : 0.0;
    double *assigned = b->s->by_rank, *extra = b->s->extra;
    for (size_t j = 0; j < b->u; j++) {
        assigned[j] = fill;
        extra[j] = fill;
    }
    return bound_value(b, assigned, extra);
}

/* The tiers of the bounds' programme: bounds.py `_Tiers`. */
typedef struct {
    const rm_bound *b;
    size_t n;       /* tiers, in s->tiers, highest first */
    size_t lowest;  /* the last tier an unjudged document may take: the scale's lowest gain */
    size_t highest; /* the first: the scale's highest gain */
    double judged_dcg;
} rm_tiers;

/* bounds.py `_Tiers.__init__`. */
static void tiers_setup(rm_tiers *tiers, const rm_bound *b) {
    const rm_measure_plan *plan = b->plan;
    rm_scratch *s = b->s;
    size_t u = b->u;
    /* The scale's gains merged with the query's positive judged gains of the first k,
       highest first, each once. */
    size_t judged_top = b->k < plan->top_depth ? b->k : plan->top_depth, n = 0, li = 0, ti = 0;
    while (li < b->n || (ti < judged_top && b->top[ti] > 0)) {
        double value;
        int scale = 0;
        if (ti < judged_top && b->top[ti] > 0 && (li >= b->n || b->top[ti] > b->levels[li])) {
            value = b->top[ti++];
        } else {
            value = b->levels[li++];
            scale = 1;
        }
        if (n && s->tiers[n - 1] == value) {
            s->assignable[n - 1] |= (uint8_t)scale;
            continue;
        }
        s->tiers[n] = value;
        s->assignable[n] = (uint8_t)scale;
        n++;
    }
    tiers->b = b;
    tiers->n = n;
    tiers->lowest = 0;
    tiers->highest = n;
    for (size_t tier = 0; tier < n; tier++) {
        if (s->assignable[tier]) {
            tiers->lowest = tier;
            if (tiers->highest == n) {
                tiers->highest = tier;
            }
        }
    }
    s->by_rank[0] = 0.0;
    for (size_t j = 0; j < u; j++) {
        s->by_rank[j + 1] = s->by_rank[j] + s->weights[s->unjudged[j]];
    }
    /* The judged documents' DCG: the ranking's own DCG prefix (an unjudged code gains 0, and
       adding 0 changes no bit), the sum bounds.py makes skipping them. */
    tiers->judged_dcg = s->dcg[b->g * plan->head + b->end - 1];
    /* Both are highest first: one walk counts the judged gains at each tier. */
    for (size_t tier = 0, i = 0; tier < n; tier++) {
        s->at[tier] = 0;
        while (i < judged_top && b->top[i] > s->tiers[tier]) {
            i++;  /* a judged gain of no tier: none, every positive one is a tier */
        }
        while (i < judged_top && b->top[i] == s->tiers[tier]) {
            s->at[tier]++;
            i++;
        }
    }
    s->above[0] = 0;
    for (size_t tier = 1; tier < n; tier++) {
        s->above[tier] = s->above[tier - 1] + s->at[tier - 1];
    }
}

/* DCG and IDCG of a grading given by counts per tier: bounds.py `_Tiers.parts`. */
static void tier_parts(const rm_tiers *tiers, const size_t *counts, double *dcg, double *ideal) {
    const rm_scratch *s = tiers->b->s;
    size_t k = tiers->b->k, taken = 0;
    double d = tiers->judged_dcg, i = 0.0;
    for (size_t tier = 0; tier < tiers->n; tier++) {
        double gain = s->tiers[tier];
        size_t c = counts[tier], start = s->above[tier] + taken;
        size_t to = start + s->at[tier] + c;
        d += gain * (s->by_rank[taken + c] - s->by_rank[taken]);
        i += gain * (s->place[to < k ? to : k] - s->place[start < k ? start : k]);
        taken += c;
    }
    *dcg = d;
    *ideal = i;
}

/* bounds.py `_Tiers.two`, into `counts`. */
static void tier_two(const rm_tiers *tiers, size_t m, size_t *counts) {
    for (size_t tier = 0; tier < tiers->n; tier++) {
        counts[tier] = 0;
    }
    counts[tiers->highest] += m;
    counts[tiers->lowest] += tiers->b->u - m;
}

/* The counts maximising DCG - t IDCG: bounds.py `_Tiers.programme`, into `out`. */
static void tier_programme(const rm_tiers *tiers, double t, size_t *out) {
    rm_scratch *s = tiers->b->s;
    size_t u = tiers->b->u, n = tiers->n, k = tiers->b->k;
    double *after = s->after, *here = s->here;
    for (size_t a = 0; a <= u; a++) {
        after[a] = 0.0;
    }
    for (size_t tier = n; tier-- > 0;) {
        double gain = s->tiers[tier];
        size_t *chosen = s->chosen + tier * (k + 1);
        /* Above the highest gain an unjudged document may take, none is taken yet. */
        size_t states = tier > tiers->highest ? u + 1 : 1;
        for (size_t taken = 0; taken < states; taken++) {
            size_t start = s->above[tier] + taken, low = 0, high = u - taken;
            if (!s->assignable[tier] || tier > tiers->lowest) {
                high = 0;
            } else if (tier == tiers->lowest) {
                low = high;
            }
            double best = -INFINITY;
            size_t pick = 0;
            for (size_t c = low; c <= high; c++) {
                size_t to = start + s->at[tier] + c;
                double value = gain * (s->by_rank[taken + c] - s->by_rank[taken]) -
                               t * gain *
                                   (s->place[to < k ? to : k] - s->place[start < k ? start : k]);
                value += after[taken + c];
                if (value > best) {
                    best = value;
                    pick = c;
                }
            }
            here[taken] = best;
            chosen[taken] = pick;
        }
        for (size_t a = 0; a <= u; a++) {
            after[a] = here[a];
        }
    }
    size_t taken = 0;
    for (size_t tier = 0; tier < n; tier++) {
        out[tier] = s->chosen[tier * (k + 1) + taken];
        taken += out[tier];
    }
}

/* bounds.py `ndcg_lower_of`: the grading `two_gain_gradings` chose (the worst `chosen`
   unjudged ranks at the highest gain, the rest at the lowest), summed as nDCG@k is. */
static double lower_ndcg(const rm_bound *b, size_t chosen) {
    size_t u = b->u;
    double highest = b->levels[0], lowest = b->levels[b->n - 1];
    double *assigned = b->s->here, *extra = b->s->extra;
    for (size_t j = 0; j < u; j++) {
        assigned[j] = j < u - chosen ? lowest : highest;
        extra[j] = j < chosen ? highest : lowest;
    }
    return bound_value(b, assigned, extra);
}

/* The u + 1 two-gain gradings both bounds start from, each scored once: the least nDCG@k
   with the highest gain at the worst m ranks (`_Tiers.least`), and the largest with it at
   the best m ranks (the start of `_Tiers.most`). Returns the lower's m; `upper_m` and `t`
   the upper's (t: -inf when no grading has a positive ideal DCG). */
static size_t two_gain_gradings(const rm_bound *b, const rm_tiers *tiers, size_t *upper_m,
                                double *t) {
    rm_scratch *s = b->s;
    size_t u = b->u, chosen = 0;
    double high = s->tiers[tiers->highest], low = s->tiers[tiers->lowest], best = NAN;
    *upper_m = 0;
    *t = -INFINITY;
    for (size_t m = 0; m <= u; m++) {
        double dcg, ideal;
        tier_two(tiers, m, s->counts);
        tier_parts(tiers, s->counts, &dcg, &ideal);
        if (ideal > 0 && dcg / ideal > *t) {
            *upper_m = m;
            *t = dcg / ideal;
        }
        double least = tiers->judged_dcg + low * (s->by_rank[u - m] - s->by_rank[0]);
        least += high * (s->by_rank[u] - s->by_rank[u - m]);
        double value = ideal > 0 ? least / ideal : b->plan->when_zero;
        if (isnan(best) || value < best) {
            best = value;
            chosen = m;
        }
    }
    return chosen;
}

/* bounds.py `ndcg_upper_of` and `_Tiers.most`: from the best of the gradings of the best m
   ranks at the highest gain, Dinkelbach's steps over the tiers' programme. */
static double upper_ndcg(const rm_bound *b, const rm_tiers *tiers, size_t start_m, double t) {
    rm_scratch *s = b->s;
    size_t n = tiers->n, *counts = s->counts, *best = s->best;
    tier_two(tiers, start_m, counts);
    for (int step = 0; step < (t > -INFINITY ? RM_BOUND_STEPS : 0); step++) {
        tier_programme(tiers, t, best);
        double new_dcg, new_ideal;
        tier_parts(tiers, best, &new_dcg, &new_ideal);
        if (new_ideal <= 0 || new_dcg / new_ideal <= t) {
            break;
        }
        for (size_t tier = 0; tier < n; tier++) {
            counts[tier] = best[tier];
        }
        t = new_dcg / new_ideal;
    }
    double *assigned = s->here, *extra = s->extra;
    size_t j = 0;
    for (size_t tier = 0; tier < n; tier++) {
        for (size_t c = 0; c < counts[tier]; c++, j++) {
            assigned[j] = s->tiers[tier];
            extra[j] = s->tiers[tier];
        }
    }
    return bound_value(b, assigned, extra);
}

/* Both bounds of nDCG@k of gain rule `g` (one setup for the two), remembered for the row:
   the lower and the upper columns of one (gain, k) find them there. */
static double bound_of(const rm_measure_plan *plan, rm_scratch *s, size_t g, const uint8_t *codes,
                       size_t taken, int64_t k, size_t query, int upper) {
    for (size_t i = 0; i < s->memos; i++) {
        if (s->memo_g[i] == g && s->memo_k[i] == k) {
            return s->memo_value[2 * i + (upper ? 1 : 0)];
        }
    }
    rm_bound b;
    double lower, most;
    if (!bound_setup(&b, plan, s, g, codes, taken, k, query) || b.n < 2) {
        lower = most = bound_filled(&b);
    } else {
        rm_tiers tiers;
        tiers_setup(&tiers, &b);
        size_t upper_m;
        double t;
        size_t lower_m = two_gain_gradings(&b, &tiers, &upper_m, &t);
        lower = lower_ndcg(&b, lower_m);
        most = upper_ndcg(&b, &tiers, upper_m, t);
    }
    size_t i = s->memos++;
    s->memo_g[i] = g;
    s->memo_k[i] = k;
    s->memo_value[2 * i] = lower;
    s->memo_value[2 * i + 1] = most;
    return upper ? most : lower;
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
    scratch->memos = 0;
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
        case RM_NDCG_LOWER:
            value = bound_of(plan, scratch, (size_t)plan->gain_of[c], codes, taken, k, query,
                             plan->kinds[c] == RM_NDCG_UPPER);
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
