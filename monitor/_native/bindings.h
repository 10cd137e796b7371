/* What the CPython bindings of monitor._speedups share: the module's bottom floor.
 *
 * Each stage binds its own C next to it (scoring/index_binding.c and .h, ingest/decode_binding.c,
 * trec/run_binding.c; kafka/record_batch.c and trec/run_order.c bind themselves), and
 * _speedups.c is the module: its table, its init and the hash key. The Python signature
 * of everything here is monitor/_speedups.pyi, and only there: the C docstrings point to it.
 */
#ifndef RANKMON_BINDINGS_H
#define RANKMON_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>


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

/* Each binding adds its types, functions and constants to the module: 0, or -1 with an
   exception set. */
int rm_add_scoring(PyObject *module);
int rm_add_ingest(PyObject *module);
int rm_add_trec(PyObject *module);

#endif
