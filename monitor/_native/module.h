/* What the CPython bindings of monitor._speedups share: the module's bottom floor.
 *
 * Each stage binds its own C next to it (scoring/index_binding.c, ingest/decode_binding.c,
 * trec/run_binding.c; kafka/record_batch.c and trec/run_order.c bind themselves), and
 * _native/module.c is the module: its table, its init and the hash key. The Python signature
 * of everything here is monitor/_speedups.pyi, and only there: the C docstrings point to it.
 */
#ifndef RANKMON_MODULE_H
#define RANKMON_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "../scoring/judgments.h"

/* A growable byte buffer. */
typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} rm_buffer;

/* Room for `extra` more bytes. `raw`: with PyMem_Raw*, callable without the GIL, and no
   exception set on failure (the caller sets it once it holds the GIL again). */
static inline int rm_buffer_grow(rm_buffer *b, size_t extra, int raw) {
    if (b->size + extra <= b->capacity) {
        return 0;
    }
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + extra) {
        capacity *= 2;
    }
    char *data = raw ? PyMem_RawRealloc(b->data, capacity) : PyMem_Realloc(b->data, capacity);
    if (data == NULL) {
        if (!raw) {
            PyErr_NoMemory();
        }
        return -1;
    }
    b->data = data;
    b->capacity = capacity;
    return 0;
}

static inline int rm_buffer_reserve(rm_buffer *b, size_t extra) {
    return rm_buffer_grow(b, extra, 0);
}

/* The UTF-8 of a str (its length in *len), or NULL with TypeError naming `what`. Inline:
   the lookups call it once per document. */
static inline const char *rm_utf8_of(PyObject *text, Py_ssize_t *len, const char *what) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what, Py_TYPE(text)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8AndSize(text, len);
}

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

/* JudgmentIndex methods the trec binding implements (trec/run_binding.c). */
PyObject *rm_index_code_run(JudgmentIndex *self, PyObject *args);
PyObject *rm_index_run_coder(JudgmentIndex *self, PyObject *args);

/* Each binding adds its types, functions and constants to the module: 0, or -1 with an
   exception set. */
int rm_add_scoring(PyObject *module);
int rm_add_ingest(PyObject *module);
int rm_add_trec(PyObject *module);

#endif
