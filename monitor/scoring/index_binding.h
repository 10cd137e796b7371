/* JudgmentIndex, the scoring stage's C lookup of grade codes, as the other bindings use it:
   the ingest scanner (ingest/decode_binding.c) and the run coder (trec/run_binding.c). */
#ifndef RANKMON_INDEX_BINDING_H
#define RANKMON_INDEX_BINDING_H

#include "../_native/bindings.h"
#include "judgments.h"

/* JudgmentIndex (scoring/index_binding.c): per query row, doc id -> grade code. */
typedef struct {
    PyObject_HEAD
    rm_judgments j;
    PyObject *query_objects; /* tuple of the query id str objects, by row */
} JudgmentIndex;

extern PyTypeObject rm_JudgmentIndexType;

static inline Py_ssize_t rm_index_row(const JudgmentIndex *self, const char *key, size_t len) {
    const rm_entry *e = rm_find(&self->j.query_table, self->j.query_ids.slots,
                                self->j.query_ids.entries, self->j.query_ids.pool, key, len,
                                rm_hash(key, len));
    return e == NULL ? -1 : (Py_ssize_t)e->code;
}

static inline uint8_t rm_index_code(const JudgmentIndex *self, Py_ssize_t row, const char *doc,
                                    size_t len, uint64_t h) {
    const rm_entry *e = rm_find(&self->j.tables[row], self->j.judged.slots,
                                self->j.judged.entries, self->j.judged.pool, doc, len, h);
    return e == NULL ? 0 : (uint8_t)e->code;
}

/* One slot of a small open-addressing table of an event's (or ranking's) inline grades, by
   keyed hash: the JudgmentIndex paths and the scanner share it. */
typedef struct {
    uint64_t hash;
    const char *doc; /* NULL: an empty slot */
    size_t len;
    uint8_t code; /* the inline grade's code; 0: the evaluation set judges the document */
} rm_inline_slot;

/* The slot of `table` holding `doc` (bytes, hash h), or the empty slot where it would go. */
static inline uint32_t rm_inline_slot_at(const rm_inline_slot *table, uint32_t mask, const char *doc,
                               size_t len, uint64_t h) {
    uint32_t i = (uint32_t)h & mask;
    while (table[i].doc != NULL &&
           !(table[i].hash == h && table[i].len == len && memcmp(table[i].doc, doc, len) == 0)) {
        i = (i + 1) & mask;
    }
    return i;
}

/* The inline grade's code of a ranked document (bytes, hash h) in `table`, 0 if none. */
static inline uint8_t rm_inline_slot_code(const rm_inline_slot *table, uint32_t mask, const char *doc,
                                size_t len, uint64_t h) {
    const rm_inline_slot *slot = &table[rm_inline_slot_at(table, mask, doc, len, h)];
    return slot->doc != NULL ? slot->code : 0;
}

#endif
