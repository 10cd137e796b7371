/* Judgment tables for rankmon's native fast path: (query, doc id bytes) -> grade code.
 *
 * Each query's judged documents live in a small open-addressing table of its own, so the ~100
 * probes of one ranking touch a few cache lines of that query only. A slot holds a 32-bit tag
 * from the hash and an entry index; an entry holds the doc id's place in a byte pool and its
 * one-byte grade code (1..255; 0 means "not judged", the code of every miss). Tags only narrow
 * the search: a hit is confirmed by comparing the bytes, so the result is exact.
 *
 * The hash is keyed with a per-process random seed (`rm_seed_hash`, from os.urandom when the
 * module loads): the tables built from event data (a ranking's doc ids, in the duplicate
 * check) must not be floodable by ids crafted offline to share their low bits, which made
 * that check quadratic (47x slower per event) with a fixed hash.
 */
#ifndef RANKMON_JUDGMENTS_H
#define RANKMON_JUDGMENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RM_EMPTY_SLOT UINT32_MAX

typedef struct {
    uint32_t tag;
    uint32_t entry;
} rm_slot;

typedef struct {
    uint32_t off; /* into the pool */
    uint32_t len;
    uint32_t code; /* grade code, or a row number in a query-id table */
} rm_entry;

typedef struct {
    uint32_t base; /* first slot */
    uint32_t mask; /* slots - 1; no slots at all when the query has no judgments */
    uint32_t count;
} rm_table;

/* The hash's key: the first word starts the state, the second goes in before the final
   avalanche. One for the whole module (defined in judgments.c, so every C file
   that hashes ids, the run parser's too, uses the same seeded key); fixed until `rm_seed_hash`. */
extern uint64_t rm_seed[2];

static inline void rm_seed_hash(const unsigned char key[16]) {
    memcpy(rm_seed, key, 16);
}

/* A keyed 64-bit hash of a short byte string: 8 bytes per step, then a final avalanche. */
static inline uint64_t rm_hash(const char *p, size_t n) {
    uint64_t h = rm_seed[0] ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4FULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        /* The last 1..7 bytes in at most two fixed-size loads (a variable-length memcpy into
           a word costs a call and a store-forwarding stall). For 4..7 bytes the two 4-byte
           loads overlap; for 1..3 bytes, first, middle and last cover them all. With the
           length mixed in above, the word still depends on every byte. */
        uint64_t w;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            w = ((uint64_t)hi << 32) | lo;
        } else {
            w = (uint64_t)(uint8_t)p[0] | ((uint64_t)(uint8_t)p[n / 2] << 8) |
                ((uint64_t)(uint8_t)p[n - 1] << 16);
        }
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    }
    h ^= rm_seed[1];
    h ^= h >> 32;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    return h;
}

static inline uint32_t rm_tag(uint64_t h) { return (uint32_t)(h >> 32); }

/* The entry holding exactly `key`, or NULL. */
static inline const rm_entry *rm_find(const rm_table *t, const rm_slot *slots,
                                      const rm_entry *entries, const char *pool,
                                      const char *key, size_t len, uint64_t h) {
    if (t->count == 0) {
        return NULL;
    }
    uint32_t tag = rm_tag(h);
    uint32_t i = (uint32_t)h & t->mask;
    for (;;) {
        const rm_slot *s = &slots[t->base + i];
        if (s->entry == RM_EMPTY_SLOT) {
            return NULL;
        }
        if (s->tag == tag) {
            const rm_entry *e = &entries[s->entry];
            if (e->len == len && memcmp(pool + e->off, key, len) == 0) {
                return e;
            }
        }
        i = (i + 1) & t->mask;
    }
}

/* Slots for `count` keys: a power of two with at most half of them used. */
static inline uint32_t rm_slots_for(uint32_t count) {
    if (count == 0) {
        return 0;
    }
    uint32_t n = 4;
    while (n < 2 * count) {
        n <<= 1;
    }
    return n;
}

/* Place entry `index` (hash h) in table t; the caller made room with rm_slots_for. */
static inline void rm_place(const rm_table *t, rm_slot *slots, uint32_t index, uint64_t h) {
    uint32_t i = (uint32_t)h & t->mask;
    while (slots[t->base + i].entry != RM_EMPTY_SLOT) {
        i = (i + 1) & t->mask;
    }
    slots[t->base + i].tag = rm_tag(h);
    slots[t->base + i].entry = index;
}

/* Tables over many byte strings sharing one pool: the per-query judgments, the query ids.
   malloc'd, so that they can be built without the GIL. */
typedef struct {
    rm_slot *slots;
    rm_entry *entries;
    char *pool;
} rm_store;

static inline void rm_store_free(rm_store *s) {
    free(s->slots);
    free(s->entries);
    free(s->pool);
    s->slots = NULL;
    s->entries = NULL;
    s->pool = NULL;
}

enum { RM_STORE_OK = 0, RM_STORE_DUPLICATE = 1, RM_STORE_TOO_LARGE = 2, RM_STORE_NO_MEMORY = 3 };

/* The slots and entries of a store over `groups` tables, table g to hold tables[g].count keys
   (the caller sets the counts), `keys` in all: each table's base and mask, every slot empty.
   The pool is the caller's to allocate. */
static inline int rm_store_layout(rm_store *store, rm_table *tables, size_t groups, size_t keys) {
    size_t slots = 0;
    for (size_t g = 0; g < groups; g++) {
        uint32_t n = rm_slots_for(tables[g].count);
        tables[g].base = (uint32_t)slots;
        tables[g].mask = n ? n - 1 : 0;
        slots += n;
    }
    if (slots >= UINT32_MAX || keys >= UINT32_MAX) {
        return RM_STORE_TOO_LARGE;
    }
    store->slots = malloc(sizeof(rm_slot) * (slots ? slots : 1));
    store->entries = malloc(sizeof(rm_entry) * (keys ? keys : 1));
    if (store->slots == NULL || store->entries == NULL) {
        return RM_STORE_NO_MEMORY;
    }
    for (size_t i = 0; i < slots; i++) {
        store->slots[i].tag = 0;
        store->slots[i].entry = RM_EMPTY_SLOT;
    }
    return RM_STORE_OK;
}

/* Key number `index` (`len` bytes at `key`) into table t with its code: the bytes copied to
   the pool at *pool_size (the caller made room), the entry written, a slot taken.
   RM_STORE_DUPLICATE, and nothing added, when t holds the key already. */
static inline int rm_store_key(rm_store *store, const rm_table *t, uint32_t index,
                               const char *key, uint32_t len, uint32_t code, size_t *pool_size) {
    uint64_t h = rm_hash(key, len);
    if (rm_find(t, store->slots, store->entries, store->pool, key, len, h) != NULL) {
        return RM_STORE_DUPLICATE;
    }
    memcpy(store->pool + *pool_size, key, len);
    store->entries[index].off = (uint32_t)*pool_size;
    store->entries[index].len = len;
    store->entries[index].code = code;
    *pool_size += len;
    rm_place(t, store->slots, index, h);
    return RM_STORE_OK;
}

#define RM_MAX_CODES 255

/* What a judgment index holds. Row q's judgments are entries [start, start + tables[q].count)
   of `judged`, where start is the sum of the counts of the rows before it, in the order they
   were given (file order for qrels). */
typedef struct {
    uint32_t queries;
    rm_table *tables;     /* per query row */
    rm_store judged;      /* entry.code: the grade's code, 0 when the grades have no codes */
    int32_t *grades;      /* per entry of `judged`: its grade */
    rm_table query_table; /* query id -> row (entry.code) */
    rm_store query_ids;
    /* The grades of codes 1..n_codes, ascending; n_codes -1: more than RM_MAX_CODES grades,
       which one byte cannot code (the entries' codes are 0 then). */
    int32_t code_grades[RM_MAX_CODES];
    int n_codes;
} rm_judgments;

/* The first of the `n` ascending values that is >= value (n when none is). */
static inline int rm_lower_bound(const int32_t *sorted, int n, int32_t value) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (sorted[mid] < value) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* code_grades and n_codes from the grades of the first `n` entries. */
static inline void rm_find_code_grades(rm_judgments *j, size_t n) {
    int count = 0;
    int32_t last = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t grade = j->grades[i];
        if (i > 0 && grade == last) { /* runs of one grade are common: no search */
            continue;
        }
        last = grade;
        int at = rm_lower_bound(j->code_grades, count, grade);
        if (at < count && j->code_grades[at] == grade) {
            continue;
        }
        if (count == RM_MAX_CODES) {
            j->n_codes = -1;
            return;
        }
        memmove(j->code_grades + at + 1, j->code_grades + at, sizeof(int32_t) * (size_t)(count - at));
        j->code_grades[at] = grade;
        count++;
    }
    j->n_codes = count;
}

static inline void rm_judgments_free(rm_judgments *j) {
    free(j->tables);
    free(j->grades);
    rm_store_free(&j->judged);
    rm_store_free(&j->query_ids);
    j->tables = NULL;
    j->grades = NULL;
}

#endif
