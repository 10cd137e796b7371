/* monitor._speedups: the per-document work of rankmon's hot paths, in C.
 *
 * Two entry points, both optional accelerators of pure-Python code that stays the reference:
 *
 * - JudgmentIndex(query_ids, judgments).codes(rows, rankings, depth): the grade code of every
 *   ranked document (what BatchScorer otherwise does with one dict probe per document).
 * - decode_events(index, values, ...): a poll's record values -> accepted events with their
 *   grade codes, scanned from the bytes (event_scan.c) without building a Python string per
 *   document. A record the scanner is not sure about is "punted": the caller decodes it with
 *   monitor.events, which decides every rejection and its reason.
 *
 * Grade codes are one byte: 0 = not judged (or right padding), 1..255 = the caller's codes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "event_scan.h"
#include "judgments.h"

/* ---------------------------------------------------------------- a growable byte buffer */

typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} rm_buffer;

static int buffer_reserve(rm_buffer *b, size_t extra) {
    if (b->size + extra <= b->capacity) {
        return 0;
    }
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + extra) {
        capacity *= 2;
    }
    char *data = PyMem_Realloc(b->data, capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->capacity = capacity;
    return 0;
}

/* ---------------------------------------------------------------- a set of strings -> rows */

/* Tables over many byte strings sharing one pool: the per-query judgments and the query ids. */
typedef struct {
    rm_slot *slots;
    rm_entry *entries;
    char *pool;
} rm_store;

static void store_free(rm_store *s) {
    PyMem_Free(s->slots);
    PyMem_Free(s->entries);
    PyMem_Free(s->pool);
    s->slots = NULL;
    s->entries = NULL;
    s->pool = NULL;
}

/* ---------------------------------------------------------------- JudgmentIndex */

typedef struct {
    PyObject_HEAD
    Py_ssize_t queries;
    rm_table *tables; /* one per query row */
    rm_store judged;
    rm_table query_table; /* query id -> row (entry.code) */
    rm_store query_ids;
    PyObject *query_objects; /* tuple of the query id str objects, by row */
} JudgmentIndex;

static void index_dealloc(JudgmentIndex *self) {
    PyMem_Free(self->tables);
    store_free(&self->judged);
    store_free(&self->query_ids);
    Py_XDECREF(self->query_objects);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static const char *utf8_of(PyObject *text, Py_ssize_t *len, const char *what) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what, Py_TYPE(text)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8AndSize(text, len);
}

/* Fill `table`/`store` with the keys of `keys` (a sequence of str), entry.code from `codes`
   (a dict key -> int) or, when `codes` is NULL, the key's position. */
static int fill_store(rm_store *store, rm_table *tables, Py_ssize_t count, PyObject *const *groups,
                      int by_position) {
    /* Pass 1: sizes. */
    size_t total_keys = 0, total_slots = 0, total_bytes = 0;
    for (Py_ssize_t g = 0; g < count; g++) {
        PyObject *group = groups[g];
        Py_ssize_t n = by_position ? PySequence_Fast_GET_SIZE(group) : PyDict_GET_SIZE(group);
        if ((size_t)n >= UINT32_MAX / 4) {
            PyErr_SetString(PyExc_OverflowError, "too many judgments");
            return -1;
        }
        tables[g].base = (uint32_t)total_slots;
        tables[g].count = (uint32_t)n;
        uint32_t slots = rm_slots_for((uint32_t)n);
        tables[g].mask = slots ? slots - 1 : 0;
        total_slots += slots;
        total_keys += (size_t)n;
    }
    if (total_slots >= UINT32_MAX || total_keys >= UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many judgments");
        return -1;
    }
    store->slots = PyMem_Malloc(sizeof(rm_slot) * (total_slots ? total_slots : 1));
    store->entries = PyMem_Malloc(sizeof(rm_entry) * (total_keys ? total_keys : 1));
    if (store->slots == NULL || store->entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < total_slots; i++) {
        store->slots[i].tag = 0;
        store->slots[i].entry = RM_EMPTY_SLOT;
    }
    rm_buffer pool = {NULL, 0, 0};
    uint32_t next = 0;
    for (Py_ssize_t g = 0; g < count; g++) {
        PyObject *group = groups[g];
        Py_ssize_t pos = 0, index = 0;
        PyObject *key, *value;
        for (;;) {
            long code;
            if (by_position) {
                if (index >= PySequence_Fast_GET_SIZE(group)) {
                    break;
                }
                key = PySequence_Fast_GET_ITEM(group, index);
                code = (long)index;
            } else {
                if (!PyDict_Next(group, &pos, &key, &value)) {
                    break;
                }
                code = PyLong_AsLong(value);
                if (code == -1 && PyErr_Occurred()) {
                    goto fail;
                }
                if (code < 1 || code > 255) {
                    PyErr_Format(PyExc_ValueError, "grade code %ld is not 1..255", code);
                    goto fail;
                }
            }
            index++;
            Py_ssize_t len;
            const char *bytes = utf8_of(key, &len, "a document or query id");
            if (bytes == NULL) {
                goto fail;
            }
            if (len > (Py_ssize_t)(UINT32_MAX / 2) || total_bytes + (size_t)len >= UINT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "judgments too large");
                goto fail;
            }
            uint64_t h = rm_hash(bytes, (size_t)len);
            if (rm_find(&tables[g], store->slots, store->entries, pool.data, bytes, (size_t)len,
                        h) != NULL) {
                PyErr_Format(PyExc_ValueError, "%R is listed twice", key);
                goto fail;
            }
            if (buffer_reserve(&pool, (size_t)len + 1) < 0) {
                goto fail;
            }
            memcpy(pool.data + pool.size, bytes, (size_t)len);
            store->entries[next].off = (uint32_t)pool.size;
            store->entries[next].len = (uint32_t)len;
            store->entries[next].code = (uint32_t)code;
            pool.size += (size_t)len;
            total_bytes += (size_t)len;
            rm_place(&tables[g], store->slots, next, h);
            next++;
        }
    }
    store->pool = pool.data ? pool.data : PyMem_Malloc(1);
    if (store->pool == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
fail:
    PyMem_Free(pool.data);
    return -1;
}

static PyObject *index_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"query_ids", "judgments", NULL};
    PyObject *query_arg, *judgment_arg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:JudgmentIndex", keywords, &query_arg,
                                     &judgment_arg)) {
        return NULL;
    }
    PyObject *query_ids = PySequence_Tuple(query_arg);
    if (query_ids == NULL) {
        return NULL;
    }
    PyObject *judgments = PySequence_Fast(judgment_arg, "judgments must be a sequence of dicts");
    if (judgments == NULL) {
        Py_DECREF(query_ids);
        return NULL;
    }
    JudgmentIndex *self = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(query_ids);
    if (PySequence_Fast_GET_SIZE(judgments) != n) {
        PyErr_SetString(PyExc_ValueError, "query_ids and judgments differ in length");
        goto fail;
    }
    PyObject **groups = PySequence_Fast_ITEMS(judgments);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyDict_Check(groups[i])) {
            PyErr_SetString(PyExc_TypeError, "judgments must be a sequence of dicts");
            goto fail;
        }
    }
    self = (JudgmentIndex *)type->tp_alloc(type, 0);
    if (self == NULL) {
        goto fail;
    }
    self->queries = n;
    self->query_objects = query_ids;
    query_ids = NULL;
    self->tables = PyMem_Calloc((size_t)(n ? n : 1), sizeof(rm_table));
    if (self->tables == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (fill_store(&self->judged, self->tables, n, groups, 0) < 0) {
        goto fail;
    }
    PyObject *as_group = self->query_objects; /* a tuple is a "fast" sequence */
    if (fill_store(&self->query_ids, &self->query_table, 1, &as_group, 1) < 0) {
        goto fail;
    }
    Py_DECREF(judgments);
    return (PyObject *)self;
fail:
    Py_XDECREF(query_ids);
    Py_DECREF(judgments);
    Py_XDECREF(self);
    return NULL;
}

static inline Py_ssize_t index_row(const JudgmentIndex *self, const char *key, size_t len) {
    const rm_entry *e = rm_find(&self->query_table, self->query_ids.slots,
                                self->query_ids.entries, self->query_ids.pool, key, len,
                                rm_hash(key, len));
    return e == NULL ? -1 : (Py_ssize_t)e->code;
}

static inline uint8_t index_code(const JudgmentIndex *self, Py_ssize_t row, const char *doc,
                                 size_t len, uint64_t h) {
    const rm_entry *e = rm_find(&self->tables[row], self->judged.slots, self->judged.entries,
                                self->judged.pool, doc, len, h);
    return e == NULL ? 0 : (uint8_t)e->code;
}

static PyObject *index_row_of(JudgmentIndex *self, PyObject *query_id) {
    Py_ssize_t len;
    const char *key = utf8_of(query_id, &len, "query_id");
    if (key == NULL) {
        return NULL;
    }
    return PyLong_FromSsize_t(index_row(self, key, (size_t)len));
}

/* codes(rows, rankings, depth) -> (bytes, lengths): the codes of each ranking's first `depth`
   documents (all when depth < 0), concatenated, and each ranking's full length. */
static PyObject *index_codes(JudgmentIndex *self, PyObject *args) {
    PyObject *rows_arg, *rankings_arg;
    Py_ssize_t depth;
    if (!PyArg_ParseTuple(args, "OOn:codes", &rows_arg, &rankings_arg, &depth)) {
        return NULL;
    }
    PyObject *rows = PySequence_Fast(rows_arg, "rows must be a sequence");
    if (rows == NULL) {
        return NULL;
    }
    PyObject *rankings = PySequence_Fast(rankings_arg, "rankings must be a sequence");
    PyObject *lengths = NULL, *out = NULL;
    rm_buffer codes = {NULL, 0, 0};
    if (rankings == NULL) {
        goto done;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rankings);
    if (PySequence_Fast_GET_SIZE(rows) != n) {
        PyErr_SetString(PyExc_ValueError, "rows and rankings differ in length");
        goto done;
    }
    lengths = PyList_New(n);
    if (lengths == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t row = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(rows, i));
        if (row == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (row < 0 || row >= self->queries) {
            PyErr_Format(PyExc_IndexError, "query row %zd out of range", row);
            goto done;
        }
        PyObject *ranking = PySequence_Fast(PySequence_Fast_GET_ITEM(rankings, i),
                                            "a ranking must be a sequence of str");
        if (ranking == NULL) {
            goto done;
        }
        Py_ssize_t docs = PySequence_Fast_GET_SIZE(ranking);
        Py_ssize_t take = depth >= 0 && depth < docs ? depth : docs;
        if (buffer_reserve(&codes, (size_t)take) < 0) {
            Py_DECREF(ranking);
            goto done;
        }
        PyObject **items = PySequence_Fast_ITEMS(ranking);
        uint8_t *dst = (uint8_t *)codes.data + codes.size;
        for (Py_ssize_t d = 0; d < take; d++) {
            Py_ssize_t len;
            const char *doc = utf8_of(items[d], &len, "a document id");
            if (doc == NULL) {
                if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                    /* No UTF-8 form (a lone surrogate): it equals no judged id, all of
                       which have one. Unjudged, as the dict lookup of the Python path says. */
                    PyErr_Clear();
                    dst[d] = 0;
                    continue;
                }
                Py_DECREF(ranking);
                goto done;
            }
            dst[d] = index_code(self, row, doc, (size_t)len, rm_hash(doc, (size_t)len));
        }
        codes.size += (size_t)take;
        Py_DECREF(ranking);
        PyObject *length = PyLong_FromSsize_t(docs);
        if (length == NULL) {
            goto done;
        }
        PyList_SET_ITEM(lengths, i, length);
    }
    PyObject *flat = PyBytes_FromStringAndSize(codes.data ? codes.data : "", (Py_ssize_t)codes.size);
    if (flat != NULL) {
        out = PyTuple_Pack(2, flat, lengths);
        Py_DECREF(flat);
    }
done:
    PyMem_Free(codes.data);
    Py_XDECREF(lengths);
    Py_XDECREF(rankings);
    Py_DECREF(rows);
    return out;
}

static Py_ssize_t index_len(JudgmentIndex *self) { return self->queries; }

static PyMethodDef index_methods[] = {
    {"codes", (PyCFunction)index_codes, METH_VARARGS,
     "codes(rows, rankings, depth) -> (bytes, lengths): grade codes of each ranking's first "
     "depth documents (all if depth < 0), concatenated; and each ranking's length."},
    {"row_of", (PyCFunction)index_row_of, METH_O,
     "row_of(query_id) -> the query's row, or -1 when it is not in the index."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods index_as_sequence = {.sq_length = (lenfunc)index_len};

static PyTypeObject JudgmentIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "monitor._speedups.JudgmentIndex",
    .tp_basicsize = sizeof(JudgmentIndex),
    .tp_dealloc = (destructor)index_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JudgmentIndex(query_ids, judgments): per query row, doc id -> grade code 1..255.",
    .tp_methods = index_methods,
    .tp_as_sequence = &index_as_sequence,
    .tp_new = index_new,
};

/* ---------------------------------------------------------------- decode_events */

enum { STATUS_ACCEPTED = 0, STATUS_PUNT = 1, STATUS_UNKNOWN_QUERY = 2 };

typedef struct {
    const char *bytes;
    Py_ssize_t len;
} rm_key;

/* Per-event set of doc ids: duplicate detection with the hashes the lookup needs anyway. */
typedef struct {
    uint64_t *slots; /* (tag << 32) | (doc index + 1); 0 = empty */
    uint64_t *hashes;
    size_t capacity;
} rm_docset;

/* 1 if the ranking lists a document twice. Also fills set->hashes[0..n). */
static int has_duplicate(rm_docset *set, const char *buf, const rm_span *docs, uint32_t n) {
    uint32_t slots = rm_slots_for(n);
    uint32_t mask = slots - 1;
    memset(set->slots, 0, sizeof(uint64_t) * slots);
    for (uint32_t d = 0; d < n; d++) {
        const char *doc = buf + docs[d].off;
        uint64_t h = rm_hash(doc, docs[d].len);
        set->hashes[d] = h;
        uint64_t tag = (uint64_t)rm_tag(h) << 32;
        uint32_t i = (uint32_t)h & mask;
        for (;;) {
            uint64_t s = set->slots[i];
            if (s == 0) {
                set->slots[i] = tag | (uint64_t)(d + 1);
                break;
            }
            if ((s & 0xFFFFFFFF00000000ULL) == tag) {
                const rm_span *other = &docs[(s & 0xFFFFFFFFULL) - 1];
                if (other->len == docs[d].len &&
                    memcmp(buf + other->off, doc, docs[d].len) == 0) {
                    return 1;
                }
            }
            i = (i + 1) & mask;
        }
    }
    return 0;
}

/* The event's values of the segment keys, in the keys' order; "" for a key it lacks. */
static PyObject *segment_values(const char *buf, const rm_event *ev, const rm_key *keys,
                                Py_ssize_t nkeys, PyObject *empty) {
    PyObject *values = PyTuple_New(nkeys);
    if (values == NULL) {
        return NULL;
    }
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        PyObject *value = NULL;
        for (uint32_t s = 0; s < ev->n_segment; s++) {
            const rm_span *k = &ev->segment_keys[s];
            if ((size_t)keys[j].len == k->len && memcmp(keys[j].bytes, buf + k->off, k->len) == 0) {
                const rm_span *v = &ev->segment_values[s];
                value = PyUnicode_DecodeASCII(buf + v->off, v->len, NULL);
                if (value == NULL) {
                    Py_DECREF(values);
                    return NULL;
                }
                break;
            }
        }
        if (value == NULL) {
            Py_INCREF(empty);
            value = empty;
        }
        PyTuple_SET_ITEM(values, j, value);
    }
    return values;
}

static PyObject *decode_events(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *keywords[] = {"index",         "values",         "timestamps_ms", "now_ms",
                               "max_depth",     "max_bytes",      "max_future_ms", "segment_keys",
                               "use_event_time", "depth",         "punt_judgments", NULL};
    PyObject *index_arg, *values_arg, *timestamps_arg, *keys_arg;
    long long now_ms, max_future_ms;
    Py_ssize_t max_depth, max_bytes, depth;
    int use_event_time, punt_judgments;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OOLnnLOpnp:decode_events", keywords,
                                     &JudgmentIndexType, &index_arg, &values_arg, &timestamps_arg,
                                     &now_ms, &max_depth, &max_bytes, &max_future_ms, &keys_arg,
                                     &use_event_time, &depth, &punt_judgments)) {
        return NULL;
    }
    if (max_depth < 1 || max_depth > 10000000) {
        PyErr_SetString(PyExc_ValueError, "max_depth must be 1..10000000");
        return NULL;
    }
    JudgmentIndex *index = (JudgmentIndex *)index_arg;
    PyObject *values = PySequence_Fast(values_arg, "values must be a sequence");
    if (values == NULL) {
        return NULL;
    }
    PyObject *timestamps = PySequence_Fast(timestamps_arg, "timestamps_ms must be a sequence");
    PyObject *keys_seq = NULL, *empty = NULL, *status = NULL, *event_ids = NULL, *query_ids = NULL;
    PyObject *rows = NULL, *times = NULL, *segments = NULL, *lengths = NULL, *out = NULL;
    rm_key *keys = NULL;
    Py_ssize_t nkeys = 0;
    rm_span *docs = NULL;
    rm_docset set = {NULL, NULL, 0};
    rm_buffer codes = {NULL, 0, 0};
    if (timestamps == NULL) {
        goto done;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    if (PySequence_Fast_GET_SIZE(timestamps) != n) {
        PyErr_SetString(PyExc_ValueError, "values and timestamps_ms differ in length");
        goto done;
    }
    empty = PyUnicode_FromStringAndSize("", 0);
    if (empty == NULL) {
        goto done;
    }
    {
        keys_seq = PySequence_List(keys_arg);
        if (keys_seq == NULL) {
            goto done;
        }
        nkeys = PyList_GET_SIZE(keys_seq);
        keys = PyMem_Calloc((size_t)(nkeys ? nkeys : 1), sizeof(rm_key));
        if (keys == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < nkeys; j++) {
            keys[j].bytes = utf8_of(PyList_GET_ITEM(keys_seq, j), &keys[j].len, "a segment key");
            if (keys[j].bytes == NULL) {
                goto done;
            }
        }
    }
    docs = PyMem_Malloc(sizeof(rm_span) * (size_t)max_depth);
    set.capacity = rm_slots_for((uint32_t)max_depth);
    set.slots = PyMem_Malloc(sizeof(uint64_t) * set.capacity);
    set.hashes = PyMem_Malloc(sizeof(uint64_t) * (size_t)max_depth);
    status = PyBytes_FromStringAndSize(NULL, n);
    event_ids = PyList_New(0);
    query_ids = PyList_New(0);
    rows = PyList_New(0);
    times = PyList_New(0);
    segments = PyList_New(0);
    lengths = PyList_New(0);
    if (docs == NULL || set.slots == NULL || set.hashes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == NULL || event_ids == NULL || query_ids == NULL || rows == NULL ||
        times == NULL || segments == NULL || lengths == NULL) {
        goto done;
    }
    char *state = PyBytes_AS_STRING(status);
    for (Py_ssize_t i = 0; i < n; i++) {
        state[i] = STATUS_PUNT;
        PyObject *value = PySequence_Fast_GET_ITEM(values, i);
        if (!PyBytes_Check(value)) {
            continue; /* None (a tombstone) or something odd: the reference path says why */
        }
        const char *buf = PyBytes_AS_STRING(value);
        Py_ssize_t len = PyBytes_GET_SIZE(value);
        if (len == 0 || len > max_bytes || len >= (Py_ssize_t)UINT32_MAX) {
            continue;
        }
        rm_event ev;
        if (rm_scan_event(buf, (size_t)len, (uint32_t)max_depth, docs, &ev) != RM_SCAN_OK) {
            continue;
        }
        if (ev.has_judgments && punt_judgments) {
            continue;
        }
        long long event_time;
        if (use_event_time && ev.has_event_time) {
            event_time = (long long)ev.event_time_ms;
        } else {
            event_time = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(timestamps, i));
            if (event_time == -1 && PyErr_Occurred()) {
                goto done;
            }
            if (event_time < 0) {
                continue; /* no event time at all: rejected by the reference path */
            }
        }
        if (event_time > now_ms + max_future_ms) {
            continue;
        }
        if (has_duplicate(&set, buf, docs, ev.n_docs)) {
            continue;
        }
        Py_ssize_t row = index_row(index, buf + ev.query_id.off, ev.query_id.len);
        if (row < 0) {
            state[i] = STATUS_UNKNOWN_QUERY;
            continue;
        }
        uint32_t take = depth >= 0 && (uint32_t)depth < ev.n_docs ? (uint32_t)depth : ev.n_docs;
        if (buffer_reserve(&codes, take) < 0) {
            goto done;
        }
        uint8_t *dst = (uint8_t *)codes.data + codes.size;
        for (uint32_t d = 0; d < take; d++) {
            dst[d] = index_code(index, row, buf + docs[d].off, docs[d].len, set.hashes[d]);
        }
        PyObject *event_id = PyUnicode_DecodeASCII(buf + ev.event_id.off, ev.event_id.len, NULL);
        PyObject *segment = event_id ? segment_values(buf, &ev, keys, nkeys, empty) : NULL;
        PyObject *row_obj = segment ? PyLong_FromSsize_t(row) : NULL;
        PyObject *time_obj = row_obj ? PyLong_FromLongLong(event_time) : NULL;
        PyObject *length_obj = time_obj ? PyLong_FromUnsignedLong(ev.n_docs) : NULL;
        int failed = length_obj == NULL || PyList_Append(event_ids, event_id) < 0 ||
                     PyList_Append(query_ids, PyTuple_GET_ITEM(index->query_objects, row)) < 0 ||
                     PyList_Append(rows, row_obj) < 0 || PyList_Append(times, time_obj) < 0 ||
                     PyList_Append(segments, segment) < 0 ||
                     PyList_Append(lengths, length_obj) < 0;
        Py_XDECREF(event_id);
        Py_XDECREF(segment);
        Py_XDECREF(row_obj);
        Py_XDECREF(time_obj);
        Py_XDECREF(length_obj);
        if (failed) {
            goto done;
        }
        codes.size += take;
        state[i] = STATUS_ACCEPTED;
    }
    PyObject *flat = PyBytes_FromStringAndSize(codes.data ? codes.data : "", (Py_ssize_t)codes.size);
    if (flat != NULL) {
        out = PyTuple_Pack(8, status, event_ids, query_ids, rows, times, segments, flat, lengths);
        Py_DECREF(flat);
    }
done:
    PyMem_Free(codes.data);
    PyMem_Free(docs);
    PyMem_Free(set.slots);
    PyMem_Free(set.hashes);
    PyMem_Free(keys);
    Py_XDECREF(keys_seq);
    Py_XDECREF(empty);
    Py_XDECREF(status);
    Py_XDECREF(event_ids);
    Py_XDECREF(query_ids);
    Py_XDECREF(rows);
    Py_XDECREF(times);
    Py_XDECREF(segments);
    Py_XDECREF(lengths);
    Py_XDECREF(timestamps);
    Py_DECREF(values);
    return out;
}

static PyMethodDef module_methods[] = {
    {"decode_events", (PyCFunction)(void (*)(void))decode_events, METH_VARARGS | METH_KEYWORDS,
     "decode_events(index, values, timestamps_ms, now_ms, max_depth, max_bytes, max_future_ms, "
     "segment_keys, use_event_time, depth, punt_judgments) -> (status, event_ids, query_ids, "
     "rows, event_times_ms, segments, codes, lengths). segments[i] is the tuple of the event's "
     "values of segment_keys (a sequence of str), in that order, '' for a key it lacks. "
     "status[i]: 0 accepted, 1 punted (decode it with monitor.events), 2 unknown query; the "
     "other lists hold the accepted events in "
     "order, codes their first `depth` grade codes (all if depth < 0) concatenated."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "monitor._speedups",
    .m_doc = "C accelerators for rankmon's per-document work (see monitor/native.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    if (PyType_Ready(&JudgmentIndexType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&JudgmentIndexType);
    if (PyModule_AddObject(module, "JudgmentIndex", (PyObject *)&JudgmentIndexType) < 0) {
        Py_DECREF(&JudgmentIndexType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
