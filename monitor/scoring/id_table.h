/* A growable table of byte-string ids -> their index in first-seen order, for the C readers of
 * run and qrels files (the query ids of a file, before its size is known).
 *
 * The ids are not copied: `names[i]` points at the caller's bytes, which must outlive the
 * table (or be re-pointed by the caller when they move). Hashed with the module's seeded
 * rm_hash, so a crafted file cannot make the lookups quadratic. */
#ifndef RANKMON_ID_TABLE_H
#define RANKMON_ID_TABLE_H

#include "judgments.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char **names; /* per index: its id, in first-appearance order */
    uint32_t *lengths;
    uint32_t count;
    uint32_t capacity;
    int64_t *slots; /* open addressing: index + 1, 0 empty */
    size_t n_slots;
} rm_id_table;

static inline void rm_id_table_free(rm_id_table *t) {
    free((void *)t->names);
    free(t->lengths);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* Twice the slots, every id placed again: 0, or -1 when out of memory. */
static inline int rm_id_table_grow(rm_id_table *t) {
    size_t n_slots = t->n_slots ? t->n_slots * 2 : 1024;
    int64_t *slots = calloc(n_slots, sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < t->count; i++) {
        size_t at = (size_t)rm_hash(t->names[i], t->lengths[i]) & (n_slots - 1);
        while (slots[at]) {
            at = (at + 1) & (n_slots - 1);
        }
        slots[at] = (int64_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* The index of id `name`, a new one if unseen (*is_new set then, when not NULL); -1 when out
   of memory. */
static inline int64_t rm_id_index(rm_id_table *t, const char *name, uint32_t len, int *is_new) {
    if (is_new != NULL) {
        *is_new = 0;
    }
    if ((size_t)(t->count + 1) * 2 > t->n_slots && rm_id_table_grow(t) != 0) {
        return -1;
    }
    size_t at = (size_t)rm_hash(name, len) & (t->n_slots - 1);
    while (t->slots[at]) {
        uint32_t i = (uint32_t)(t->slots[at] - 1);
        if (t->lengths[i] == len && memcmp(t->names[i], name, len) == 0) {
            return i;
        }
        at = (at + 1) & (t->n_slots - 1);
    }
    if (t->count == t->capacity) {
        uint32_t capacity = t->capacity ? t->capacity * 2 : 256;
        const char **names = realloc((void *)t->names, capacity * sizeof *names);
        if (names == NULL) {
            return -1;
        }
        t->names = names;
        uint32_t *lengths = realloc(t->lengths, capacity * sizeof *lengths);
        if (lengths == NULL) {
            return -1;
        }
        t->lengths = lengths;
        t->capacity = capacity;
    }
    t->names[t->count] = name;
    t->lengths[t->count] = len;
    t->slots[at] = (int64_t)t->count + 1;
    if (is_new != NULL) {
        *is_new = 1;
    }
    return t->count++;
}

#endif
