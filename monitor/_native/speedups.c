/* monitor._speedups: the per-document work of rankmon's hot paths, in C.
 *
 * Entry points, all optional accelerators of pure-Python code that stays the reference:
 *
 * - JudgmentIndex(query_ids, judgments).codes(rows, rankings, depth): the grade code of every
 *   ranked document (what BatchScorer otherwise does with one dict probe per document).
 *   JudgmentIndex.from_qrels(data) builds one straight from a TREC qrels file (qrels_scan.c).
 * - decode_events(index, values, ...): a poll's record values -> accepted events with their
 *   grade codes, scanned from the bytes (event_scan.c) without building a Python string per
 *   document. A record the scanner is not sure about is "punted": the caller decodes it with
 *   monitor.ingest.events, which decides every rejection and its reason.
 * - measure_codes(...): the measures of rankings given as grade codes (measure_kernel.c).
 * - parse_records(...): the records of a fetched Kafka record batch as rankmon's
 *   SourceRecords (record_batch.c), in place of kafka-python's per-record Python reader.
 *
 * Grade codes are one byte: 0 = not judged (or right padding), 1..255 = the caller's codes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* Each stage's C code lives next to the Python it speeds up; this file is the CPython module. */
#include "../ingest/event_scan.h"
#include "../kafka/record_batch.h"
#include "../scoring/judgments.h"
#include "../scoring/measure_kernel.h"
#include "../scoring/ascii_text.h"
#include "../scoring/qrels_scan.h"
#include "../trec/run_order.h"

/* The key of rm_hash (see judgments.h): random once the module loads (`seed_hashes`). */
uint64_t rm_seed[2] = {0x9E3779B97F4A7C15ULL, 0};

/* ---------------------------------------------------------------- a growable byte buffer */

typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} rm_buffer;

/* Room for `extra` more bytes. `raw`: with PyMem_Raw*, callable without the GIL, and no
   exception set on failure (the caller sets it once it holds the GIL again). */
static int buffer_grow(rm_buffer *b, size_t extra, int raw) {
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

static int buffer_reserve(rm_buffer *b, size_t extra) { return buffer_grow(b, extra, 0); }

/* ---------------------------------------------------------------- JudgmentIndex */

typedef struct {
    PyObject_HEAD
    rm_judgments j;
    PyObject *query_objects; /* tuple of the query id str objects, by row */
} JudgmentIndex;

static void index_dealloc(JudgmentIndex *self) {
    rm_judgments_free(&self->j);
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

/* Fill `table`/`store` with the keys of `groups`: each a sequence of str keyed by position
   (`by_position`), or a dict key -> code, or key -> grade when `code_of` (a dict grade ->
   code) is given. `grades` (when not NULL) gets each entry's value: the grade, or the code
   without `code_of`. */
static int fill_store(rm_store *store, rm_table *tables, Py_ssize_t count, PyObject *const *groups,
                      int by_position, PyObject *code_of, int32_t **grades) {
    /* Pass 1: sizes. */
    size_t total_keys = 0;
    for (Py_ssize_t g = 0; g < count; g++) {
        PyObject *group = groups[g];
        Py_ssize_t n = by_position ? PySequence_Fast_GET_SIZE(group) : PyDict_GET_SIZE(group);
        if ((size_t)n >= UINT32_MAX / 4) {
            PyErr_SetString(PyExc_OverflowError, "too many judgments");
            return -1;
        }
        tables[g].count = (uint32_t)n;
        total_keys += (size_t)n;
    }
    int laid = rm_store_layout(store, tables, (size_t)count, total_keys);
    int32_t *values = grades ? malloc(sizeof(int32_t) * (total_keys ? total_keys : 1)) : NULL;
    if (laid != RM_STORE_OK || (grades && values == NULL)) {
        free(values);
        if (laid == RM_STORE_TOO_LARGE) {
            PyErr_SetString(PyExc_OverflowError, "too many judgments");
        } else {
            PyErr_NoMemory();
        }
        return -1;
    }
    size_t pool_size = 0, pool_capacity = 0;
    uint32_t next = 0;
    for (Py_ssize_t g = 0; g < count; g++) {
        PyObject *group = groups[g];
        Py_ssize_t pos = 0, index = 0;
        PyObject *key, *value;
        for (;;) {
            long code, given = 0;
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
                if (code_of != NULL) {
                    PyObject *grade = value;
                    given = PyLong_AsLong(grade);
                    if (given == -1 && PyErr_Occurred()) {
                        goto fail;
                    }
                    value = PyDict_GetItemWithError(code_of, grade);
                    if (value == NULL) {
                        if (!PyErr_Occurred()) {
                            PyErr_Format(PyExc_ValueError, "grade %R has no code", grade);
                        }
                        goto fail;
                    }
                }
                code = PyLong_AsLong(value);
                if (code == -1 && PyErr_Occurred()) {
                    goto fail;
                }
                if (code < 1 || code > 255) {
                    PyErr_Format(PyExc_ValueError, "grade code %ld is not 1..255", code);
                    goto fail;
                }
                given = code_of != NULL ? given : code;
                if (given < INT32_MIN || given > INT32_MAX) {
                    PyErr_Format(PyExc_OverflowError, "grade %ld is not a 32-bit integer", given);
                    goto fail;
                }
            }
            index++;
            Py_ssize_t len;
            const char *bytes = utf8_of(key, &len, "a document or query id");
            if (bytes == NULL) {
                goto fail;
            }
            if (len > (Py_ssize_t)(UINT32_MAX / 2) || pool_size + (size_t)len >= UINT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "judgments too large");
                goto fail;
            }
            if (pool_size + (size_t)len + 1 > pool_capacity) { /* the pool grows as it fills */
                size_t capacity = pool_capacity ? 2 * pool_capacity : 4096;
                while (capacity < pool_size + (size_t)len + 1) {
                    capacity *= 2;
                }
                char *grown = realloc(store->pool, capacity);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                store->pool = grown;
                pool_capacity = capacity;
            }
            if (rm_store_key(store, &tables[g], next, bytes, (uint32_t)len, (uint32_t)code,
                             &pool_size) == RM_STORE_DUPLICATE) {
                PyErr_Format(PyExc_ValueError, "%R is listed twice", key);
                goto fail;
            }
            if (values != NULL) {
                values[next] = (int32_t)given;
            }
            next++;
        }
    }
    if (store->pool == NULL && (store->pool = malloc(1)) == NULL) { /* no key at all */
        PyErr_NoMemory();
        goto fail;
    }
    if (grades != NULL) {
        *grades = values;
    }
    return 0;
fail:
    free(values);
    return -1;
}

/* A new index over `j` (taken over: freed with the index) with `query_objects`, the query
   ids by row; NULL (and `j` freed) on failure. */
static JudgmentIndex *index_of(PyTypeObject *type, rm_judgments *j, PyObject *query_objects) {
    JudgmentIndex *self = (JudgmentIndex *)type->tp_alloc(type, 0);
    if (self == NULL) {
        rm_judgments_free(j);
        Py_DECREF(query_objects);
        return NULL;
    }
    self->j = *j;
    self->query_objects = query_objects;
    return self;
}

static PyObject *index_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"query_ids", "judgments", "code_of", NULL};
    PyObject *query_arg, *judgment_arg, *code_of = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:JudgmentIndex", keywords, &query_arg,
                                     &judgment_arg, &code_of)) {
        return NULL;
    }
    if (code_of == Py_None) {
        code_of = NULL;
    } else if (code_of != NULL && !PyDict_Check(code_of)) {
        PyErr_SetString(PyExc_TypeError, "code_of must be a dict grade -> code, or None");
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
    rm_judgments j = {0};
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
    if ((size_t)n >= UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many queries");
        goto fail;
    }
    j.queries = (uint32_t)n;
    j.tables = calloc((size_t)(n ? n : 1), sizeof(rm_table));
    if (j.tables == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (fill_store(&j.judged, j.tables, n, groups, 0, code_of, &j.grades) < 0) {
        goto fail;
    }
    size_t entries = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        entries += j.tables[i].count;
    }
    rm_find_code_grades(&j, entries);
    PyObject *as_group = query_ids; /* a tuple is a "fast" sequence */
    if (fill_store(&j.query_ids, &j.query_table, 1, &as_group, 1, NULL, NULL) < 0) {
        goto fail;
    }
    Py_DECREF(judgments);
    return (PyObject *)index_of(type, &j, query_ids);
fail:
    rm_judgments_free(&j);
    Py_DECREF(query_ids);
    Py_DECREF(judgments);
    return NULL;
}

/* from_qrels(data) -> JudgmentIndex | None: see qrels_scan.h. */
static PyObject *index_from_qrels(PyTypeObject *type, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*:from_qrels", &data)) {
        return NULL;
    }
    rm_judgments j = {0};
    int status;
    Py_BEGIN_ALLOW_THREADS;
    status = qs_read_qrels(data.buf, (size_t)data.len, &j);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&data);
    if (status != QS_OK) {
        rm_judgments_free(&j);
        return status == QS_PUNT ? Py_NewRef(Py_None) : PyErr_NoMemory();
    }
    PyObject *query_objects = PyTuple_New((Py_ssize_t)j.queries);
    for (uint32_t q = 0; query_objects != NULL && q < j.queries; q++) {
        const rm_entry *e = &j.query_ids.entries[q];
        PyObject *qid = rm_ascii_text(j.query_ids.pool + e->off, e->len);
        if (qid == NULL) {
            Py_CLEAR(query_objects);
            break;
        }
        PyTuple_SET_ITEM(query_objects, (Py_ssize_t)q, qid);
    }
    if (query_objects == NULL) {
        rm_judgments_free(&j);
        return NULL;
    }
    return (PyObject *)index_of(type, &j, query_objects);
}

/* judgments() -> [{doc: grade}, ...] by row, each in the order its judgments were given. */
static PyObject *index_judgments(JudgmentIndex *self, PyObject *unused) {
    (void)unused;
    PyObject *rows = PyList_New((Py_ssize_t)self->j.queries);
    size_t e = 0;
    for (uint32_t q = 0; rows != NULL && q < self->j.queries; q++) {
        PyObject *docs = PyDict_New();
        if (docs == NULL) {
            Py_CLEAR(rows);
            break;
        }
        PyList_SET_ITEM(rows, (Py_ssize_t)q, docs);
        for (uint32_t k = 0; k < self->j.tables[q].count; k++, e++) {
            const rm_entry *entry = &self->j.judged.entries[e];
            PyObject *doc = PyUnicode_DecodeUTF8(self->j.judged.pool + entry->off,
                                                 (Py_ssize_t)entry->len, "strict");
            PyObject *grade = doc ? PyLong_FromLong(self->j.grades[e]) : NULL;
            int failed = grade == NULL || PyDict_SetItem(docs, doc, grade) < 0;
            Py_XDECREF(doc);
            Py_XDECREF(grade);
            if (failed) {
                Py_CLEAR(rows);
                break;
            }
        }
    }
    return rows;
}

/* ideal_codes() -> (offsets, codes): see the method's doc. */
static PyObject *index_ideal_codes(JudgmentIndex *self, PyObject *unused) {
    (void)unused;
    if (self->j.n_codes < 0) {
        PyErr_SetString(PyExc_ValueError, "the index has no grade codes (more than 255 grades)");
        return NULL;
    }
    size_t ideal = 0, entries = 0;
    for (uint32_t q = 0; q < self->j.queries; q++) {
        entries += self->j.tables[q].count;
    }
    for (size_t e = 0; e < entries; e++) {
        ideal += self->j.grades[e] >= 0;
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(int64_t) *
                                                                     ((size_t)self->j.queries + 1)));
    PyObject *codes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ideal);
    if (offsets == NULL || codes == NULL) {
        Py_XDECREF(offsets);
        Py_XDECREF(codes);
        return NULL;
    }
    char *offset_bytes = PyBytes_AS_STRING(offsets);
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(codes);
    int64_t written = 0;
    size_t e = 0;
    for (uint32_t q = 0; q < self->j.queries; q++) {
        memcpy(offset_bytes + sizeof written * q, &written, sizeof written);
        for (uint32_t k = 0; k < self->j.tables[q].count; k++, e++) {
            if (self->j.grades[e] >= 0) {
                out[written++] = (uint8_t)self->j.judged.entries[e].code;
            }
        }
    }
    memcpy(offset_bytes + sizeof written * self->j.queries, &written, sizeof written);
    PyObject *result = PyTuple_Pack(2, offsets, codes);
    Py_DECREF(offsets);
    Py_DECREF(codes);
    return result;
}

static PyObject *index_code_grades(JudgmentIndex *self, void *closure) {
    (void)closure;
    if (self->j.n_codes < 0) {
        Py_RETURN_NONE;
    }
    PyObject *grades = PyTuple_New(self->j.n_codes);
    for (int c = 0; grades != NULL && c < self->j.n_codes; c++) {
        PyObject *grade = PyLong_FromLong(self->j.code_grades[c]);
        if (grade == NULL) {
            Py_CLEAR(grades);
            break;
        }
        PyTuple_SET_ITEM(grades, c, grade);
    }
    return grades;
}

static PyObject *index_query_ids(JudgmentIndex *self, void *closure) {
    (void)closure;
    return Py_NewRef(self->query_objects);
}

static inline Py_ssize_t index_row(const JudgmentIndex *self, const char *key, size_t len) {
    const rm_entry *e = rm_find(&self->j.query_table, self->j.query_ids.slots,
                                self->j.query_ids.entries, self->j.query_ids.pool, key, len,
                                rm_hash(key, len));
    return e == NULL ? -1 : (Py_ssize_t)e->code;
}

static inline uint8_t index_code(const JudgmentIndex *self, Py_ssize_t row, const char *doc,
                                 size_t len, uint64_t h) {
    const rm_entry *e = rm_find(&self->j.tables[row], self->j.judged.slots,
                                self->j.judged.entries, self->j.judged.pool, doc, len, h);
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

/* The query row rows[i] (a fast sequence of ints), or -1 with an exception set. */
static Py_ssize_t row_at(const JudgmentIndex *self, PyObject *rows, Py_ssize_t i) {
    Py_ssize_t row = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(rows, i));
    if (row == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (row < 0 || row >= (Py_ssize_t)self->j.queries) {
        PyErr_Format(PyExc_IndexError, "query row %zd out of range", row);
        return -1;
    }
    return row;
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
static uint32_t inline_slot_at(const rm_inline_slot *table, uint32_t mask, const char *doc,
                               size_t len, uint64_t h) {
    uint32_t i = (uint32_t)h & mask;
    while (table[i].doc != NULL &&
           !(table[i].hash == h && table[i].len == len && memcmp(table[i].doc, doc, len) == 0)) {
        i = (i + 1) & mask;
    }
    return i;
}

/* The inline grade's code of a ranked document (bytes, hash h) in `table`, 0 if none. */
static uint8_t inline_slot_code(const rm_inline_slot *table, uint32_t mask, const char *doc,
                                size_t len, uint64_t h) {
    const rm_inline_slot *slot = &table[inline_slot_at(table, mask, doc, len, h)];
    return slot->doc != NULL ? slot->code : 0;
}

/* dst[0..take) = the codes of items[0..take) for query `row`; an unjudged document whose hash
   passes `filter` (one bit per entry of `table`, 0: no table) takes its code in `table`.
   1: done, -1: an error. */
static int code_ranking(const JudgmentIndex *self, Py_ssize_t row, PyObject *const *items,
                        Py_ssize_t take, uint8_t *dst, const rm_inline_slot *table,
                        uint32_t mask, uint64_t filter) {
    for (Py_ssize_t d = 0; d < take; d++) {
        Py_ssize_t len;
        const char *doc = utf8_of(items[d], &len, "a document id");
        if (doc == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                /* No UTF-8 form (a lone surrogate): it equals no judged id, all of which have
                   one. Unjudged, as the dict lookup of the Python path says. */
                PyErr_Clear();
                dst[d] = 0;
                continue;
            }
            return -1;
        }
        uint64_t h = rm_hash(doc, (size_t)len);
        uint8_t code = index_code(self, row, doc, (size_t)len, h);
        if (code == 0 && (filter >> (h >> 58)) & 1) {
            code = inline_slot_code(table, mask, doc, (size_t)len, h);
        }
        dst[d] = code;
    }
    return 1;
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
        Py_ssize_t row = row_at(self, rows, i);
        if (row < 0) {
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
        int state = code_ranking(self, row, PySequence_Fast_ITEMS(ranking), take,
                                 (uint8_t *)codes.data + codes.size, NULL, 0, 0);
        Py_DECREF(ranking);
        if (state < 0) {
            goto done;
        }
        codes.size += (size_t)take;
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

/* The code of an inline grade: grade_codes[grade] for an int 0..len-1, 0 for anything else
   (not an int, out of range, or a grade without a code yet: the caller's general path). */
static uint8_t inline_grade_code(PyObject *value, const Py_buffer *grade_codes) {
    if (!PyLong_Check(value)) {
        return 0;
    }
    int overflow;
    long long grade = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || grade < 0 || grade >= (long long)grade_codes->len) {
        PyErr_Clear();
        return 0;
    }
    return ((const uint8_t *)grade_codes->buf)[grade];
}

/* Code one ranking with its inline grades: dst[0..take) = the evaluation set's code of each of
   items[0..take), or for an unjudged document with an inline grade that grade's code. Every
   inline grade of a document the evaluation set has not judged, ranked or not, goes to `added`
   (the ideal ranking's extra grades). `slots` is scratch. 1: done, 0: a grade without a code
   or a document id that is not a str (what was written is unusable), -1: an error. */
static int code_inline_ranking(const JudgmentIndex *self, Py_ssize_t row, PyObject *extra,
                               PyObject *const *items, Py_ssize_t take, uint8_t *dst,
                               const Py_buffer *grade_codes, rm_buffer *slots, rm_buffer *added,
                               Py_ssize_t *n_added) {
    *n_added = 0;
    if (PyDict_GET_SIZE(extra) > (1 << 24)) {
        return 0;
    }
    uint32_t size = rm_slots_for((uint32_t)PyDict_GET_SIZE(extra));
    uint32_t mask = size - 1;
    slots->size = 0;
    if (buffer_reserve(slots, sizeof(rm_inline_slot) * size) < 0) {
        return -1;
    }
    rm_inline_slot *table = (rm_inline_slot *)slots->data;
    memset(table, 0, sizeof(rm_inline_slot) * size);
    uint64_t filter = 0; /* one bit per added document (its hash's top 6): most misses */
    Py_ssize_t pos = 0;
    PyObject *doc, *value;
    while (PyDict_Next(extra, &pos, &doc, &value)) {
        if (value == Py_None) {
            continue;
        }
        uint8_t code = inline_grade_code(value, grade_codes);
        if (code == 0 || !PyUnicode_Check(doc)) {
            return 0; /* the general path decides */
        }
        Py_ssize_t len;
        const char *bytes = PyUnicode_AsUTF8AndSize(doc, &len);
        if (bytes == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                return -1;
            }
            PyErr_Clear();
            return 0;
        }
        uint64_t h = rm_hash(bytes, (size_t)len);
        if (index_code(self, row, bytes, (size_t)len, h) != 0) {
            continue; /* the evaluation set's grade wins */
        }
        if (buffer_reserve(added, 1) < 0) {
            return -1;
        }
        ((uint8_t *)added->data)[added->size++] = code;
        (*n_added)++;
        table[inline_slot_at(table, mask, bytes, (size_t)len, h)] =
            (rm_inline_slot){h, bytes, (size_t)len, code};
        filter |= 1ULL << (h >> 58);
    }
    return code_ranking(self, row, items, take, dst, table, mask, filter);
}

/* inline_codes(rows, rankings, depth, extras, grade_codes) -> (codes, lengths, added,
   added_counts), or None when an inline grade has no code in `grade_codes` (a bytes-like,
   grade -> code, 0: none) or an extra that is not a dict. `codes` and `lengths` are those of
   codes(); extras[i] is None or a dict doc -> grade or None; added holds, per ranking, the codes of its inline grades of
   documents the evaluation set has not judged, concatenated, added_counts how many each. */
static PyObject *index_inline_codes(JudgmentIndex *self, PyObject *args) {
    PyObject *rows_arg, *rankings_arg, *extras_arg;
    Py_ssize_t depth;
    Py_buffer grade_codes = {0};
    if (!PyArg_ParseTuple(args, "OOnOy*:inline_codes", &rows_arg, &rankings_arg, &depth,
                          &extras_arg, &grade_codes)) {
        return NULL;
    }
    PyObject *rows = NULL, *rankings = NULL, *extras = NULL, *lengths = NULL, *counts = NULL;
    PyObject *out = NULL;
    rm_buffer codes = {NULL, 0, 0}, added = {NULL, 0, 0}, slots = {NULL, 0, 0};
    int usable = 1;
    rows = PySequence_Fast(rows_arg, "rows must be a sequence");
    rankings = rows ? PySequence_Fast(rankings_arg, "rankings must be a sequence") : NULL;
    extras = rankings ? PySequence_Fast(extras_arg, "extras must be a sequence") : NULL;
    if (extras == NULL) {
        goto done;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rankings);
    if (PySequence_Fast_GET_SIZE(rows) != n || PySequence_Fast_GET_SIZE(extras) != n) {
        PyErr_SetString(PyExc_ValueError, "rows, rankings and extras differ in length");
        goto done;
    }
    lengths = PyList_New(n);
    counts = PyList_New(n);
    if (lengths == NULL || counts == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n && usable; i++) {
        Py_ssize_t row = row_at(self, rows, i);
        if (row < 0) {
            goto done;
        }
        PyObject *extra = PySequence_Fast_GET_ITEM(extras, i);
        if (extra != Py_None && !PyDict_Check(extra)) {
            usable = 0; /* another mapping: the caller makes it a dict */
            break;
        }
        PyObject *ranking = PySequence_Fast(PySequence_Fast_GET_ITEM(rankings, i),
                                            "a ranking must be a sequence of str");
        if (ranking == NULL) {
            goto done;
        }
        Py_ssize_t docs = PySequence_Fast_GET_SIZE(ranking);
        Py_ssize_t take = depth >= 0 && depth < docs ? depth : docs;
        PyObject **items = PySequence_Fast_ITEMS(ranking);
        Py_ssize_t n_added = 0;
        int state = buffer_reserve(&codes, (size_t)take) < 0 ? -1 : 1;
        uint8_t *dst = (uint8_t *)codes.data + codes.size;
        if (state > 0 && extra != Py_None && PyDict_GET_SIZE(extra) > 0) {
            state = code_inline_ranking(self, row, extra, items, take, dst, &grade_codes, &slots,
                                        &added, &n_added);
        } else if (state > 0) {
            state = code_ranking(self, row, items, take, dst, NULL, 0, 0);
        }
        Py_DECREF(ranking);
        if (state < 0) {
            goto done;
        }
        usable = state;
        codes.size += (size_t)take;
        PyObject *length = PyLong_FromSsize_t(docs);
        PyObject *count = PyLong_FromSsize_t(n_added);
        if (length == NULL || count == NULL) {
            Py_XDECREF(length);
            Py_XDECREF(count);
            goto done;
        }
        PyList_SET_ITEM(lengths, i, length);
        PyList_SET_ITEM(counts, i, count);
    }
    if (!usable) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *flat = PyBytes_FromStringAndSize(codes.data ? codes.data : "", (Py_ssize_t)codes.size);
    PyObject *new_codes =
        PyBytes_FromStringAndSize(added.data ? added.data : "", (Py_ssize_t)added.size);
    if (flat != NULL && new_codes != NULL) {
        out = PyTuple_Pack(4, flat, lengths, new_codes, counts);
    }
    Py_XDECREF(flat);
    Py_XDECREF(new_codes);
done:
    PyBuffer_Release(&grade_codes);
    PyMem_Free(codes.data);
    PyMem_Free(added.data);
    PyMem_Free(slots.data);
    Py_XDECREF(lengths);
    Py_XDECREF(counts);
    Py_XDECREF(extras);
    Py_XDECREF(rankings);
    Py_XDECREF(rows);
    return out;
}

static int64_t run_row_of(const void *ctx, const char *qid, size_t len) {
    return index_row((const JudgmentIndex *)ctx, qid, len);
}

static uint8_t run_code_of(const void *ctx, int64_t row, const char *doc, size_t len,
                           uint64_t hash) {
    return index_code((const JudgmentIndex *)ctx, (Py_ssize_t)row, doc, len, hash);
}

/* code_run(data, float32, max_retrieved, depth) -> (tag, qids, rows, codes, lengths) | None:
   a TREC run parsed, ordered and coded against this index (see monitor/trec/run_order.h). */
static PyObject *index_code_run(JudgmentIndex *self, PyObject *args) {
    Py_buffer data;
    int float32;
    long long max_retrieved, depth;
    if (!PyArg_ParseTuple(args, "y*pLL:code_run", &data, &float32, &max_retrieved, &depth)) {
        return NULL;
    }
    PyObject *result = tr_code_run(data.buf, (size_t)data.len, float32, max_retrieved, depth,
                                   self, run_row_of, run_code_of);
    PyBuffer_Release(&data);
    return result;
}

/* ---------------------------------------------------------------- RunCoder */

typedef struct {
    PyObject_HEAD
    tr_coder *coder;
    PyObject *index; /* the JudgmentIndex the coder looks grades up in, kept alive */
    int split;       /* after finish(): tr_coder_split */
    int busy;        /* feed() or read() runs without the GIL: no other call may enter */
} RunCoder;

/* The coder, or NULL with an exception when it is finished or another thread is in
   feed()/read() (they release the GIL: a finish() then would free what they read). Set and
   tested under the GIL, so two threads cannot both pass. */
static tr_coder *coder_usable(RunCoder *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the run coder is in use by another thread");
        return NULL;
    }
    if (self->coder == NULL) {
        PyErr_SetString(PyExc_ValueError, "the run coder is finished");
        return NULL;
    }
    return self->coder;
}

static void coder_dealloc(RunCoder *self) {
    tr_coder_free(self->coder);
    Py_XDECREF(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *coder_feed(RunCoder *self, PyObject *arg) {
    Py_buffer chunk;
    tr_coder *coder = coder_usable(self);
    if (coder == NULL) {
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &chunk, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    int status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    status = tr_coder_feed(coder, chunk.buf, (size_t)chunk.len);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    PyBuffer_Release(&chunk);
    return PyBool_FromLong(status == 0);
}

static PyObject *coder_read(RunCoder *self, PyObject *args) {
    int fd, parts = 1;
    Py_ssize_t chunk;
    if (!PyArg_ParseTuple(args, "in|i:read", &fd, &chunk, &parts)) {
        return NULL;
    }
    tr_coder *coder = coder_usable(self);
    if (coder == NULL) {
        return NULL;
    }
    if (chunk < 1) {
        PyErr_Format(PyExc_ValueError, "chunk must be >= 1, got %zd", chunk);
        return NULL;
    }
    int status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    status = tr_coder_read(coder, fd, (size_t)chunk, parts);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    if (status < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyBool_FromLong(status == 0);
}

static PyObject *coder_finish(RunCoder *self, PyObject *unused) {
    (void)unused;
    if (coder_usable(self) == NULL) {
        return NULL;
    }
    PyObject *result = tr_coder_finish(self->coder);
    self->split = tr_coder_split(self->coder);
    tr_coder_free(self->coder);
    self->coder = NULL;
    return result;
}

static PyObject *coder_split(RunCoder *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->split);
}

static PyGetSetDef coder_getset[] = {
    {"split", (getter)coder_split, NULL,
     "True when finish() gave None because a query's lines are in two blocks: code_run then "
     "reads the file whole; any other None leaves it to the Python path.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef coder_methods[] = {
    {"feed", (PyCFunction)coder_feed, METH_O,
     "feed(chunk) -> bool: read the next bytes of the run; False once the coder has given up "
     "(a query in two blocks, or a line it leaves to the Python path)."},
    {"read", (PyCFunction)coder_read, METH_VARARGS,
     "read(fd, chunk, parts=1) -> bool: feed() the rest of the open file `fd`, read `chunk` "
     "bytes at a time straight into the coder's buffer; with parts=2 a regular file of at least "
     "2 chunks, read from its start, is read in two parts at once (two threads): the same "
     "result. OSError when a read fails."},
    {"finish", (PyCFunction)coder_finish, METH_NOARGS,
     "finish() -> (tag, qids, rows, codes, lengths) or None: as JudgmentIndex.code_run."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RunCoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "monitor._speedups.RunCoder",
    .tp_basicsize = sizeof(RunCoder),
    .tp_dealloc = (destructor)coder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A run file fed in chunks and coded query by query (JudgmentIndex.run_coder).",
    .tp_methods = coder_methods,
    .tp_getset = coder_getset,
};

static PyObject *index_run_coder(JudgmentIndex *self, PyObject *args) {
    int float32;
    long long max_retrieved, depth;
    if (!PyArg_ParseTuple(args, "pLL:run_coder", &float32, &max_retrieved, &depth)) {
        return NULL;
    }
    RunCoder *coder = PyObject_New(RunCoder, &RunCoderType);
    if (coder == NULL) {
        return NULL;
    }
    coder->index = Py_NewRef((PyObject *)self);
    coder->split = 0;
    coder->busy = 0;
    coder->coder = tr_coder_new(float32, max_retrieved, depth, self, run_row_of, run_code_of);
    if (coder->coder == NULL) {
        Py_DECREF(coder);
        return PyErr_NoMemory();
    }
    return (PyObject *)coder;
}

static Py_ssize_t index_len(JudgmentIndex *self) { return (Py_ssize_t)self->j.queries; }

static PyMethodDef index_methods[] = {
    {"codes", (PyCFunction)index_codes, METH_VARARGS,
     "codes(rows, rankings, depth) -> (bytes, lengths): grade codes of each ranking's first "
     "depth documents (all if depth < 0), concatenated; and each ranking's length."},
    {"inline_codes", (PyCFunction)index_inline_codes, METH_VARARGS,
     "inline_codes(rows, rankings, depth, extras, grade_codes) -> (codes, lengths, added, "
     "added_counts), or None when an inline grade has no code: codes() with each ranking's "
     "inline grades (extras[i]: dict doc -> grade, or None) laid over its unjudged documents, "
     "and the codes of the inline grades of documents the evaluation set has not judged."},
    {"code_run", (PyCFunction)index_code_run, METH_VARARGS,
     "code_run(data, float32, max_retrieved, depth) -> (tag, qids, rows, codes, lengths) or "
     "None: a TREC run parsed and ordered as order_run does, each query's first `depth` "
     "documents (all if depth < 0) as grade codes; None leaves the file to the Python path "
     "(see monitor/trec/run_order.h)."},
    {"run_coder", (PyCFunction)index_run_coder, METH_VARARGS,
     "run_coder(float32, max_retrieved, depth) -> RunCoder: code_run on a file fed in chunks, "
     "one query's lines in memory at a time (see monitor/trec/run_order.h)."},
    {"row_of", (PyCFunction)index_row_of, METH_O,
     "row_of(query_id) -> the query's row, or -1 when it is not in the index."},
    {"from_qrels", (PyCFunction)index_from_qrels, METH_VARARGS | METH_CLASS,
     "from_qrels(data) -> JudgmentIndex or None: TREC qrels read in C straight into the "
     "index, with no Python object per judgment (codes: each grade's rank among the distinct "
     "grades, 1 the lowest); None leaves the file to the Python path (see "
     "monitor/scoring/qrels_scan.h)."},
    {"judgments", (PyCFunction)index_judgments, METH_NOARGS,
     "judgments() -> [{doc: grade}, ...]: each row's judgments, in the order they were given."},
    {"ideal_codes", (PyCFunction)index_ideal_codes, METH_NOARGS,
     "ideal_codes() -> (offsets, codes): the codes of each row's judgments with a grade >= 0 "
     "(its ideal ranking's, unordered), concatenated in `codes`; row q's are "
     "codes[offsets[q]:offsets[q + 1]], offsets being queries + 1 native int64s."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef index_getset[] = {
    {"code_grades", (getter)index_code_grades, NULL,
     "The distinct grades, ascending (a qrels index codes grade code_grades[c - 1] as c); "
     "None when there are more than 255.",
     NULL},
    {"query_ids", (getter)index_query_ids, NULL, "The query ids, by row (a tuple).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods index_as_sequence = {.sq_length = (lenfunc)index_len};

static PyTypeObject JudgmentIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "monitor._speedups.JudgmentIndex",
    .tp_basicsize = sizeof(JudgmentIndex),
    .tp_dealloc = (destructor)index_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JudgmentIndex(query_ids, judgments, code_of=None): per query row, doc id -> grade "
              "code 1..255 (judgments[row] maps doc -> code, or doc -> grade with code_of, a "
              "dict grade -> code).",
    .tp_methods = index_methods,
    .tp_getset = index_getset,
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

/* Probes past which the duplicate check gives up on an event (the reference path, with
   Python's SipHash set, decides it): with keyed hashes at half load a chain this long does
   not happen by chance, so only ids crafted against a known seed get there. */
#define RM_MAX_PROBES 48

/* 1 if the ranking lists a document twice (or its ids collide too much: let the reference
   path decide). Also fills set->hashes[0..n). */
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
        for (uint32_t probes = 0;; probes++) {
            if (probes > RM_MAX_PROBES) {
                return 1;
            }
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


/* What the scan of one record left for the second phase (with the GIL): where its fields are. */
typedef struct {
    uint8_t status;
    rm_span event_id;
    int64_t event_time_ms;
    Py_ssize_t row;
    uint32_t n_docs;
    uint32_t n_added; /* inline grades added to the ideal ranking (in the job's `added`) */
} rm_scanned;

#define RM_ABSENT UINT32_MAX /* a segment value span's len: the event lacks the key */

/* The values of the segment keys an event carries (spans; len RM_ABSENT when it lacks one). */
static void segment_spans(const char *buf, const rm_event *ev, const rm_key *keys,
                          Py_ssize_t nkeys, rm_span *spans) {
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        spans[j].off = 0;
        spans[j].len = RM_ABSENT;
        for (uint32_t s = 0; s < ev->n_segment; s++) {
            const rm_span *k = &ev->segment_keys[s];
            if ((size_t)keys[j].len == k->len && memcmp(keys[j].bytes, buf + k->off, k->len) == 0) {
                spans[j] = ev->segment_values[s];
                break;
            }
        }
    }
}

typedef struct {
    const JudgmentIndex *index;
    Py_ssize_t n;
    const char **bufs;      /* per record: its bytes, or NULL (not bytes: punted) */
    const Py_ssize_t *lens; /* per record */
    const int64_t *timestamps;
    int64_t now_ms, max_future_ms;
    Py_ssize_t max_depth, max_bytes, depth;
    Py_ssize_t max_id, max_value; /* an id or segment value longer (raw bytes) punts */
    int use_event_time;
    const uint8_t *grade_codes; /* inline grade -> code (0: none); NULL: judgments ignored */
    size_t n_grade_codes;
    const rm_key *keys;
    Py_ssize_t nkeys;
    /* out */
    rm_scanned *scanned; /* per record */
    rm_span *segments;   /* per record x nkeys */
    rm_buffer codes;
    rm_buffer added; /* codes of the inline grades of unjudged documents, event after event */
    /* scratch */
    rm_span *docs;
    rm_docset set;
    rm_inline_slot judged[2 * RM_MAX_JUDGMENTS]; /* an event's inline grades, by hash */
} rm_scan_job;

/* Index an event's inline judgments for the ranking's codes (job->judged, `*mask` its size - 1,
   `filter`: one bit per unjudged document's hash) and append the codes of the grades of
   documents the evaluation set has not judged to job->added (`added` of them). 1: done, 0:
   punt (too many judgments, a document listed twice, or a grade without a code yet), -1: out
   of memory. A judged document keeps a slot with code 0: the evaluation set's grade wins. */
static int inline_judgments(rm_scan_job *job, const char *buf, const rm_event *ev,
                            Py_ssize_t row, uint32_t *mask, uint64_t *filter, uint32_t *added) {
    if (ev->n_judgments > RM_MAX_JUDGMENTS) {
        return 0;
    }
    uint32_t slots = rm_slots_for(ev->n_judgments);
    *mask = slots - 1;
    memset(job->judged, 0, sizeof(rm_inline_slot) * slots);
    size_t start = job->added.size;
    if (buffer_grow(&job->added, ev->n_judgments, 1) < 0) {
        return -1;
    }
    for (uint32_t j = 0; j < ev->n_judgments; j++) {
        const char *doc = buf + ev->judgment_docs[j].off;
        size_t len = ev->judgment_docs[j].len;
        uint64_t h = rm_hash(doc, len);
        uint32_t i = inline_slot_at(job->judged, *mask, doc, len, h);
        if (job->judged[i].doc != NULL) {
            job->added.size = start;
            return 0; /* listed twice: Python keeps the last grade */
        }
        uint8_t code = 0;
        if (index_code(job->index, row, doc, len, h) == 0) {
            uint16_t grade = ev->judgment_grades[j];
            code = grade < job->n_grade_codes ? job->grade_codes[grade] : 0;
            if (code == 0) {
                job->added.size = start;
                return 0;
            }
            ((uint8_t *)job->added.data)[job->added.size++] = code;
            *filter |= 1ULL << (h >> 58);
        }
        job->judged[i] = (rm_inline_slot){h, doc, len, code};
    }
    *added = (uint32_t)(job->added.size - start);
    return 1;
}

/* Whether a string of the event is longer than its limit in bytes as written: its ids, doc
   ids and inline judgments' doc ids `limit`, its segment values `value_limit`. Such an event
   punts, and the reference decoder measures the decoded string (never longer than what was
   written). */
static int has_long_string(const rm_event *ev, const rm_span *docs, Py_ssize_t limit,
                           Py_ssize_t value_limit) {
    if ((Py_ssize_t)ev->event_id.len > limit || (Py_ssize_t)ev->query_id.len > limit) {
        return 1;
    }
    for (uint32_t d = 0; d < ev->n_docs; d++) {
        if ((Py_ssize_t)docs[d].len > limit) {
            return 1;
        }
    }
    uint32_t judged = ev->n_judgments < RM_MAX_JUDGMENTS ? ev->n_judgments : RM_MAX_JUDGMENTS;
    for (uint32_t j = 0; ev->has_judgments && j < judged; j++) {
        if ((Py_ssize_t)ev->judgment_docs[j].len > limit) {
            return 1;
        }
    }
    for (uint32_t s = 0; s < ev->n_segment; s++) {
        if ((Py_ssize_t)ev->segment_values[s].len > value_limit) {
            return 1;
        }
    }
    return 0;
}

/* Phase one, without the GIL: scan, check and code every record. -1: out of memory. */
static int scan_all(rm_scan_job *job) {
    for (Py_ssize_t i = 0; i < job->n; i++) {
        rm_scanned *out = &job->scanned[i];
        out->status = STATUS_PUNT;
        const char *buf = job->bufs[i];
        Py_ssize_t len = job->lens[i];
        if (buf == NULL || len == 0 || len > job->max_bytes || len >= (Py_ssize_t)UINT32_MAX) {
            continue;
        }
        rm_event ev;
        if (rm_scan_event(buf, (size_t)len, (uint32_t)job->max_depth, job->docs, &ev) !=
            RM_SCAN_OK) {
            continue;
        }
        if (has_long_string(&ev, job->docs, job->max_id, job->max_value)) {
            continue;
        }
        int64_t event_time;
        if (job->use_event_time && ev.has_event_time) {
            event_time = ev.event_time_ms;
        } else {
            event_time = job->timestamps[i];
            if (event_time < 0) {
                continue; /* no event time at all: rejected by the reference path */
            }
        }
        if (event_time > job->now_ms + job->max_future_ms) {
            continue;
        }
        if (has_duplicate(&job->set, buf, job->docs, ev.n_docs)) {
            continue;
        }
        Py_ssize_t row = index_row(job->index, buf + ev.query_id.off, ev.query_id.len);
        if (row < 0) {
            out->status = STATUS_UNKNOWN_QUERY;
            continue;
        }
        uint32_t take = ev.n_docs;
        if (job->depth >= 0 && (uint64_t)job->depth < take) {
            take = (uint32_t)job->depth;
        }
        uint64_t filter = 0;
        uint32_t mask = 0, added = 0;
        if (ev.has_judgments && job->grade_codes != NULL) {
            int state = inline_judgments(job, buf, &ev, row, &mask, &filter, &added);
            if (state < 0) {
                return -1;
            }
            if (state == 0) {
                continue;
            }
        }
        if (buffer_grow(&job->codes, take, 1) < 0) {
            return -1;
        }
        uint8_t *dst = (uint8_t *)job->codes.data + job->codes.size;
        for (uint32_t d = 0; d < take; d++) {
            uint64_t h = job->set.hashes[d];
            uint8_t code = index_code(job->index, row, buf + job->docs[d].off, job->docs[d].len, h);
            if (code == 0 && (filter >> (h >> 58)) & 1) {
                code = inline_slot_code(job->judged, mask, buf + job->docs[d].off,
                                        job->docs[d].len, h);
            }
            dst[d] = code;
        }
        job->codes.size += take;
        out->n_added = added;
        segment_spans(buf, &ev, job->keys, job->nkeys, job->segments + i * job->nkeys);
        out->status = STATUS_ACCEPTED;
        out->event_id = ev.event_id;
        out->event_time_ms = event_time;
        out->row = row;
        out->n_docs = ev.n_docs;
    }
    return 0;
}

/* The tuple of an event's segment values ("" for a key it lacks). */
static PyObject *segment_tuple(const char *buf, const rm_span *spans, Py_ssize_t nkeys,
                               PyObject *empty) {
    PyObject *values = PyTuple_New(nkeys);
    if (values == NULL) {
        return NULL;
    }
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        PyObject *value;
        if (spans[j].len == RM_ABSENT) {
            value = Py_NewRef(empty);
        } else {
            value = PyUnicode_DecodeASCII(buf + spans[j].off, spans[j].len, NULL);
            if (value == NULL) {
                Py_DECREF(values);
                return NULL;
            }
        }
        PyTuple_SET_ITEM(values, j, value);
    }
    return values;
}

/* Phase two, with the GIL: the accepted events' Python objects. */
static PyObject *event_objects(const rm_scan_job *job, PyObject *empty, PyObject *query_objects) {
    Py_ssize_t accepted = 0;
    for (Py_ssize_t i = 0; i < job->n; i++) {
        accepted += job->scanned[i].status == STATUS_ACCEPTED;
    }
    PyObject *status = PyBytes_FromStringAndSize(NULL, job->n);
    PyObject *event_ids = PyList_New(accepted), *query_ids = PyList_New(accepted);
    PyObject *rows = PyList_New(accepted), *times = PyList_New(accepted);
    PyObject *segments = PyList_New(accepted), *lengths = PyList_New(accepted);
    PyObject *counts = PyList_New(accepted);
    PyObject *flat = PyBytes_FromStringAndSize(job->codes.data ? job->codes.data : "",
                                               (Py_ssize_t)job->codes.size);
    PyObject *added = PyBytes_FromStringAndSize(job->added.data ? job->added.data : "",
                                                (Py_ssize_t)job->added.size);
    PyObject *out = NULL;
    rm_span *last_spans = NULL;
    const char **last_bufs = NULL;
    if (status == NULL || event_ids == NULL || query_ids == NULL || rows == NULL ||
        times == NULL || segments == NULL || lengths == NULL || counts == NULL || flat == NULL ||
        added == NULL) {
        goto done;
    }
    char *state = PyBytes_AS_STRING(status);
    Py_ssize_t a = 0;
    PyObject *last_values = NULL;
    last_spans = PyMem_Calloc((size_t)(job->nkeys ? job->nkeys : 1), sizeof(rm_span));
    last_bufs = PyMem_Calloc((size_t)(job->nkeys ? job->nkeys : 1), sizeof(char *));
    if (last_spans == NULL || last_bufs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < job->n; i++) {
        const rm_scanned *e = &job->scanned[i];
        state[i] = (char)e->status;
        if (e->status != STATUS_ACCEPTED) {
            continue;
        }
        const char *buf = job->bufs[i];
        const rm_span *spans = job->segments + i * job->nkeys;
        /* Most events repeat the previous one's segment values: share its tuple. */
        int same = last_values != NULL;
        for (Py_ssize_t j = 0; same && j < job->nkeys; j++) {
            same = spans[j].len == last_spans[j].len &&
                   (spans[j].len == RM_ABSENT ||
                    memcmp(buf + spans[j].off, last_bufs[j] + last_spans[j].off, spans[j].len) ==
                        0);
        }
        PyObject *event_id = PyUnicode_DecodeASCII(buf + e->event_id.off, e->event_id.len, NULL);
        PyObject *row = PyLong_FromSsize_t(e->row);
        PyObject *time = PyLong_FromLongLong(e->event_time_ms);
        PyObject *length = PyLong_FromUnsignedLong(e->n_docs);
        PyObject *count = PyLong_FromUnsignedLong(e->n_added);
        PyObject *values = same ? Py_NewRef(last_values) : segment_tuple(buf, spans, job->nkeys, empty);
        if (event_id == NULL || row == NULL || time == NULL || length == NULL || count == NULL ||
            values == NULL) {
            Py_XDECREF(event_id);
            Py_XDECREF(row);
            Py_XDECREF(time);
            Py_XDECREF(length);
            Py_XDECREF(count);
            Py_XDECREF(values);
            goto done;
        }
        PyObject *query = PyTuple_GET_ITEM(query_objects, e->row);
        Py_INCREF(query);
        PyList_SET_ITEM(event_ids, a, event_id);
        PyList_SET_ITEM(query_ids, a, query);
        PyList_SET_ITEM(rows, a, row);
        PyList_SET_ITEM(times, a, time);
        PyList_SET_ITEM(lengths, a, length);
        PyList_SET_ITEM(counts, a, count);
        PyList_SET_ITEM(segments, a, values);
        a++;
        if (!same) {
            last_values = values; /* borrowed: the list holds it */
            for (Py_ssize_t j = 0; j < job->nkeys; j++) {
                last_spans[j] = spans[j];
                last_bufs[j] = buf;
            }
        }
    }
    out = PyTuple_Pack(10, status, event_ids, query_ids, rows, times, segments, flat, lengths,
                       added, counts);
done:
    PyMem_Free(last_spans);
    PyMem_Free((void *)last_bufs);
    Py_XDECREF(status);
    Py_XDECREF(event_ids);
    Py_XDECREF(query_ids);
    Py_XDECREF(rows);
    Py_XDECREF(times);
    Py_XDECREF(segments);
    Py_XDECREF(lengths);
    Py_XDECREF(counts);
    Py_XDECREF(flat);
    Py_XDECREF(added);
    return out;
}

static PyObject *decode_events(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *keywords[] = {"index",         "values",         "timestamps_ms", "now_ms",
                               "max_depth",     "max_bytes",      "max_future_ms", "segment_keys",
                               "use_event_time", "depth",         "grade_codes",
                               "max_id_bytes",  "max_value_bytes", NULL};
    PyObject *index_arg, *values_arg, *timestamps_arg, *keys_arg, *grade_codes;
    long long now_ms, max_future_ms;
    Py_ssize_t max_depth, max_bytes, depth, max_id = PY_SSIZE_T_MAX, max_value = PY_SSIZE_T_MAX;
    int use_event_time;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OOLnnLOpnO|nn:decode_events", keywords,
                                     &JudgmentIndexType, &index_arg, &values_arg, &timestamps_arg,
                                     &now_ms, &max_depth, &max_bytes, &max_future_ms, &keys_arg,
                                     &use_event_time, &depth, &grade_codes, &max_id,
                                     &max_value)) {
        return NULL;
    }
    if (grade_codes != Py_None && !PyBytes_Check(grade_codes)) {
        PyErr_SetString(PyExc_TypeError, "grade_codes must be bytes or None");
        return NULL;
    }
    if (max_depth < 1 || max_depth > 10000000) {
        PyErr_SetString(PyExc_ValueError, "max_depth must be 1..10000000");
        return NULL;
    }
    /* Our own lists: they keep every value and key alive while the GIL is released. */
    PyObject *values = PySequence_List(values_arg);
    PyObject *timestamps = values ? PySequence_Fast(timestamps_arg, "timestamps_ms must be a sequence") : NULL;
    PyObject *keys_seq = timestamps ? PySequence_List(keys_arg) : NULL;
    PyObject *empty = keys_seq ? PyUnicode_FromStringAndSize("", 0) : NULL;
    PyObject *out = NULL;
    rm_scan_job job;
    memset(&job, 0, sizeof job);
    rm_key *keys = NULL;
    if (empty == NULL) {
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (PySequence_Fast_GET_SIZE(timestamps) != n) {
        PyErr_SetString(PyExc_ValueError, "values and timestamps_ms differ in length");
        goto done;
    }
    Py_ssize_t nkeys = PyList_GET_SIZE(keys_seq);
    keys = PyMem_Calloc((size_t)(nkeys ? nkeys : 1), sizeof(rm_key));
    job.bufs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    job.lens = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    job.timestamps = PyMem_Calloc((size_t)(n ? n : 1), sizeof(int64_t));
    job.scanned = PyMem_Calloc((size_t)(n ? n : 1), sizeof(rm_scanned));
    job.segments = PyMem_Calloc((size_t)(n * nkeys > 0 ? n * nkeys : 1), sizeof(rm_span));
    job.docs = PyMem_Malloc(sizeof(rm_span) * (size_t)max_depth);
    job.set.capacity = rm_slots_for((uint32_t)max_depth);
    job.set.slots = PyMem_Malloc(sizeof(uint64_t) * job.set.capacity);
    job.set.hashes = PyMem_Malloc(sizeof(uint64_t) * (size_t)max_depth);
    if (keys == NULL || job.bufs == NULL || job.lens == NULL || job.timestamps == NULL ||
        job.scanned == NULL || job.segments == NULL || job.docs == NULL || job.set.slots == NULL ||
        job.set.hashes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        keys[j].bytes = utf8_of(PyList_GET_ITEM(keys_seq, j), &keys[j].len, "a segment key");
        if (keys[j].bytes == NULL) {
            goto done;
        }
    }
    const char **bufs = (const char **)job.bufs;
    Py_ssize_t *lens = (Py_ssize_t *)job.lens;
    int64_t *stamps = (int64_t *)job.timestamps;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        if (PyBytes_Check(value)) { /* else None (a tombstone) or odd: the reference path says */
            bufs[i] = PyBytes_AS_STRING(value);
            lens[i] = PyBytes_GET_SIZE(value);
        }
        long long stamp = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(timestamps, i));
        if (stamp == -1 && PyErr_Occurred()) {
            goto done;
        }
        stamps[i] = stamp;
    }
    job.index = (JudgmentIndex *)index_arg;
    job.n = n;
    job.now_ms = now_ms;
    job.max_future_ms = max_future_ms;
    job.max_depth = max_depth;
    job.max_bytes = max_bytes;
    job.max_id = max_id;
    job.max_value = max_value;
    job.depth = depth;
    job.use_event_time = use_event_time;
    if (grade_codes != Py_None) { /* the args hold it while the GIL is released */
        job.grade_codes = (const uint8_t *)PyBytes_AS_STRING(grade_codes);
        job.n_grade_codes = (size_t)PyBytes_GET_SIZE(grade_codes);
    }
    job.keys = keys;
    job.nkeys = nkeys;
    int scanned;
    Py_BEGIN_ALLOW_THREADS;
    scanned = scan_all(&job);
    Py_END_ALLOW_THREADS;
    if (scanned < 0) {
        PyErr_NoMemory();
        goto done;
    }
    out = event_objects(&job, empty, ((JudgmentIndex *)index_arg)->query_objects);
done:
    PyMem_RawFree(job.codes.data);
    PyMem_RawFree(job.added.data);
    PyMem_Free((void *)job.bufs);
    PyMem_Free((void *)job.lens);
    PyMem_Free((void *)job.timestamps);
    PyMem_Free(job.scanned);
    PyMem_Free(job.segments);
    PyMem_Free(job.docs);
    PyMem_Free(job.set.slots);
    PyMem_Free(job.set.hashes);
    PyMem_Free(keys);
    Py_XDECREF(empty);
    Py_XDECREF(keys_seq);
    Py_XDECREF(timestamps);
    Py_XDECREF(values);
    return out;
}

/* ---------------------------------------------------------------- measure_codes */

/* A read-only buffer of `count` items of `itemsize` bytes (any C-contiguous bytes-like). */
static int check_buffer(const Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count,
                        const char *name) {
    if (view->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, view->len,
                     itemsize * count);
        return -1;
    }
    return 0;
}

static PyObject *measure_codes(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer codes = {0}, taken = {0}, lengths = {0}, rows = {0}, kinds = {0}, gain_of = {0};
    Py_buffer cutoffs = {0}, ideal_of = {0}, gains = {0}, relevant = {0}, judged = {0};
    Py_buffer discounts = {0}, ideals = {0}, num_rel = {0}, out = {0};
    Py_ssize_t n_ideals;
    double when_zero;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*y*y*ny*dw*:measure_codes", &codes, &taken,
                          &lengths, &rows, &kinds, &gain_of, &cutoffs, &ideal_of, &gains,
                          &relevant, &judged, &discounts, &ideals, &n_ideals, &num_rel,
                          &when_zero, &out)) {
        return NULL;
    }
    Py_ssize_t n = taken.len / 8, columns = kinds.len / 4, queries = num_rel.len / 8;
    Py_ssize_t n_gains = gains.len / (8 * RM_CODES), head = discounts.len / 8;
    if (check_buffer(&taken, 8, n, "taken") < 0 || check_buffer(&lengths, 8, n, "lengths") < 0 ||
        check_buffer(&rows, 8, n, "rows") < 0 || check_buffer(&kinds, 4, columns, "kinds") < 0 ||
        check_buffer(&gain_of, 4, columns, "gain_of") < 0 ||
        check_buffer(&cutoffs, 8, columns, "cutoffs") < 0 ||
        check_buffer(&ideal_of, 4, columns, "ideal_of") < 0 ||
        check_buffer(&gains, 8 * RM_CODES, n_gains, "gains") < 0 ||
        check_buffer(&relevant, 1, RM_CODES, "relevant") < 0 ||
        check_buffer(&judged, 1, RM_CODES, "judged") < 0 ||
        check_buffer(&num_rel, 8, queries, "num_rel") < 0 || n_ideals < 0 ||
        check_buffer(&ideals, 8, queries * n_ideals, "ideals") < 0 ||
        check_buffer(&out, 8, n * columns, "out") < 0) {
        goto done;
    }
    const int64_t *taken_of = taken.buf, *length_of = lengths.buf, *row_of = rows.buf;
    const int32_t *kind_of = kinds.buf, *gain_index = gain_of.buf, *ideal_index = ideal_of.buf;
    const int64_t *cutoff_of = cutoffs.buf;
    for (Py_ssize_t c = 0; c < columns; c++) {
        if (kind_of[c] < 0 || kind_of[c] >= RM_KINDS) {
            PyErr_Format(PyExc_ValueError, "unknown measure kind %d", (int)kind_of[c]);
            goto done;
        }
        int dcg = kind_of[c] == RM_NDCG || kind_of[c] == RM_DCG;
        if ((dcg && (gain_index[c] < 0 || gain_index[c] >= n_gains)) ||
            (kind_of[c] == RM_NDCG && (ideal_index[c] < 0 || ideal_index[c] >= n_ideals)) ||
            ((kind_of[c] == RM_PRECISION || kind_of[c] == RM_JUDGED) && cutoff_of[c] < 1)) {
            PyErr_Format(PyExc_ValueError, "column %zd: bad gain, ideal or cutoff", c);
            goto done;
        }
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        if (taken_of[r] < 0 || taken_of[r] > length_of[r] || row_of[r] < 0 ||
            row_of[r] >= queries) {
            PyErr_Format(PyExc_ValueError, "ranking %zd: bad taken, length or row", r);
            goto done;
        }
        total += (Py_ssize_t)taken_of[r];
    }
    if (total != codes.len) {
        PyErr_Format(PyExc_ValueError, "codes: %zd bytes, the rankings take %zd", codes.len, total);
        goto done;
    }
    rm_measure_plan plan = {
        .columns = (size_t)columns,
        .kinds = kind_of,
        .gain_of = gain_index,
        .cutoffs = cutoff_of,
        .ideal_of = ideal_index,
        .n_gains = (size_t)n_gains,
        .gains = gains.buf,
        .relevant = relevant.buf,
        .judged = judged.buf,
        .discounts = discounts.buf,
        .head = (size_t)head,
        .ideals = ideals.buf,
        .n_ideals = (size_t)n_ideals,
        .num_rel = num_rel.buf,
        .when_zero = when_zero,
    };
    size_t slots = (size_t)(head ? head : 1);
    rm_scratch scratch = {
        .dcg = PyMem_Malloc(sizeof(double) * slots * (size_t)(n_gains ? n_gains : 1)),
        .rel = PyMem_Malloc(sizeof(int64_t) * slots),
        .judged = PyMem_Malloc(sizeof(int64_t) * slots),
    };
    if (scratch.dcg == NULL || scratch.rel == NULL || scratch.judged == NULL) {
        PyErr_NoMemory();
    } else {
        const uint8_t *at = codes.buf;
        double *dst = out.buf;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t r = 0; r < n; r++) {
            rm_measure_row(&plan, &scratch, at, (size_t)taken_of[r], length_of[r],
                           (size_t)row_of[r], dst + r * columns);
            at += taken_of[r];
        }
        Py_END_ALLOW_THREADS;
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyMem_Free(scratch.dcg);
    PyMem_Free(scratch.rel);
    PyMem_Free(scratch.judged);
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&taken);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&gain_of);
    PyBuffer_Release(&cutoffs);
    PyBuffer_Release(&ideal_of);
    PyBuffer_Release(&gains);
    PyBuffer_Release(&relevant);
    PyBuffer_Release(&judged);
    PyBuffer_Release(&discounts);
    PyBuffer_Release(&ideals);
    PyBuffer_Release(&num_rel);
    PyBuffer_Release(&out);
    return result;
}

/* ideal_rows(offsets, ideal_codes, rows, added, added_counts, spec_gain, spec_cutoff, gains,
   order, n_codes, relevant, discounts, base_ideal, base_num_rel, out_ideal, out_num_rel): the
   IDCG columns (out_ideal[i]) and num_rel (out_num_rel[i]) of ranking i. With no added codes
   they are its query's, base_ideal[rows[i]] and base_num_rel[rows[i]]; otherwise its query's
   ideal codes ideal_codes[offsets[rows[i]]:offsets[rows[i] + 1]] and its own added codes (the
   next added_counts[i] of `added`) make its ideal ranking (see rm_ideal_row). With no base
   (base_ideal and base_num_rel empty) every ranking's ideal ranking is made that way: the
   queries' own values, from their ideal codes. */
static PyObject *ideal_rows(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer offsets = {0}, ideal_codes = {0}, rows = {0}, added = {0}, counts = {0};
    Py_buffer spec_gain = {0}, spec_cutoff = {0}, gains = {0}, order = {0}, relevant = {0};
    Py_buffer discounts = {0}, base_ideal = {0}, base_num_rel = {0}, out_ideal = {0};
    Py_buffer out_num_rel = {0};
    Py_ssize_t n_codes;
    PyObject *result = NULL;
    double *sorted = NULL;
    uint8_t *merged = NULL;
    uint32_t code_counts[RM_CODES] = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*ny*y*y*y*w*w*:ideal_rows", &offsets,
                          &ideal_codes, &rows, &added, &counts, &spec_gain, &spec_cutoff, &gains,
                          &order, &n_codes, &relevant, &discounts, &base_ideal, &base_num_rel,
                          &out_ideal, &out_num_rel)) {
        return NULL;
    }
    Py_ssize_t queries = offsets.len / 8 - 1, n = rows.len / 8, specs = spec_gain.len / 4;
    Py_ssize_t n_gains = gains.len / (8 * RM_CODES), n_discounts = discounts.len / 8;
    int from_codes = base_ideal.len == 0 && base_num_rel.len == 0;
    if (queries < 0 || check_buffer(&offsets, 8, queries + 1, "offsets") < 0 ||
        check_buffer(&rows, 8, n, "rows") < 0 || check_buffer(&counts, 8, n, "added_counts") < 0 ||
        check_buffer(&spec_gain, 4, specs, "spec_gain") < 0 ||
        check_buffer(&spec_cutoff, 8, specs, "spec_cutoff") < 0 ||
        check_buffer(&gains, 8 * RM_CODES, n_gains, "gains") < 0 ||
        check_buffer(&order, RM_CODES, n_gains, "order") < 0 ||
        check_buffer(&relevant, 1, RM_CODES, "relevant") < 0 ||
        check_buffer(&discounts, 8, n_discounts, "discounts") < 0 ||
        (!from_codes && (check_buffer(&base_ideal, 8, queries * specs, "base_ideal") < 0 ||
                         check_buffer(&base_num_rel, 8, queries, "base_num_rel") < 0)) ||
        check_buffer(&out_ideal, 8, n * specs, "out_ideal") < 0 ||
        check_buffer(&out_num_rel, 8, n, "out_num_rel") < 0) {
        goto done;
    }
    const int64_t *offset_of = offsets.buf, *row_of = rows.buf, *count_of = counts.buf;
    const int32_t *gain_index = spec_gain.buf;
    for (Py_ssize_t s = 0; s < specs; s++) {
        if (gain_index[s] < 0 || gain_index[s] >= n_gains) {
            PyErr_Format(PyExc_ValueError, "spec_gain: column %zd has no gain row", s);
            goto done;
        }
    }
    if (n_codes < 0 || n_codes > RM_CODES) {
        PyErr_Format(PyExc_ValueError, "n_codes: %zd is not 0..%d", n_codes, RM_CODES);
        goto done;
    }
    /* A code missing from the gain order would be dropped from the ideal ranking. */
    uint8_t listed[RM_CODES];
    for (Py_ssize_t g = 0; g < n_gains; g++) {
        memset(listed, 0, sizeof(listed));
        for (Py_ssize_t o = 0; o < n_codes; o++) {
            listed[((const uint8_t *)order.buf)[g * RM_CODES + o]] = 1;
        }
        for (Py_ssize_t c = 0; c < n_codes; c++) {
            if (!listed[c]) {
                PyErr_Format(PyExc_ValueError, "order: gain row %zd lacks code %zd", g, c);
                goto done;
            }
        }
    }
    Py_ssize_t longest = 0, total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (row_of[i] < 0 || row_of[i] >= queries || count_of[i] < 0 ||
            count_of[i] > added.len - total || offset_of[row_of[i]] < 0 ||
            offset_of[row_of[i]] > offset_of[row_of[i] + 1] ||
            offset_of[row_of[i] + 1] > ideal_codes.len) {
            PyErr_Format(PyExc_ValueError, "ranking %zd: bad row, offsets or added count", i);
            goto done;
        }
        total += (Py_ssize_t)count_of[i];
        if (count_of[i] > 0 || from_codes) {
            Py_ssize_t size =
                (Py_ssize_t)(offset_of[row_of[i] + 1] - offset_of[row_of[i]] + count_of[i]);
            longest = size > longest ? size : longest;
        }
    }
    for (Py_ssize_t a = 0; a < added.len; a++) {
        if (((const uint8_t *)added.buf)[a] >= n_codes) {
            PyErr_Format(PyExc_ValueError, "added: code %d is not below n_codes",
                         (int)((const uint8_t *)added.buf)[a]);
            goto done;
        }
    }
    if (total != added.len) {
        PyErr_Format(PyExc_ValueError, "added: %zd codes, the counts say %zd", added.len, total);
        goto done;
    }
    if (n_discounts < longest) {
        PyErr_Format(PyExc_ValueError, "discounts: %zd, an ideal ranking has %zd grades",
                     n_discounts, longest);
        goto done;
    }
    sorted = PyMem_Malloc(sizeof(double) * (size_t)(longest ? longest : 1) *
                          (size_t)(n_gains ? n_gains : 1));
    merged = PyMem_Malloc((size_t)(longest ? longest : 1));
    if (sorted == NULL || merged == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    rm_ideal_plan plan = {
        .n_specs = (size_t)specs,
        .spec_gain = gain_index,
        .spec_cutoff = spec_cutoff.buf,
        .n_gains = (size_t)n_gains,
        .gains = gains.buf,
        .order = order.buf,
        .n_codes = (size_t)n_codes,
        .relevant = relevant.buf,
        .discounts = discounts.buf,
    };
    const uint8_t *known = ideal_codes.buf, *extra = added.buf;
    double *ideal = out_ideal.buf;
    int64_t *num_rel = out_num_rel.buf;
    const double *query_ideal = base_ideal.buf;
    const int64_t *query_num_rel = base_num_rel.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (count_of[i] == 0 && !from_codes) {
            memcpy(ideal + i * specs, query_ideal + row_of[i] * specs, sizeof(double) * (size_t)specs);
            num_rel[i] = query_num_rel[row_of[i]];
            continue;
        }
        size_t start = (size_t)offset_of[row_of[i]];
        size_t own = (size_t)(offset_of[row_of[i] + 1] - offset_of[row_of[i]]);
        memcpy(merged, known + start, own);
        memcpy(merged + own, extra, (size_t)count_of[i]);
        extra += count_of[i];
        for (size_t c = 0; c < own; c++) {
            if (merged[c] >= n_codes) {
                PyErr_Format(PyExc_ValueError, "ideal_codes: code %d is not below n_codes",
                             (int)merged[c]);
                goto done;
            }
        }
        rm_ideal_row(&plan, merged, own + (size_t)count_of[i], sorted, code_counts,
                     ideal + i * specs, num_rel + i);
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(sorted);
    PyMem_Free(merged);
    Py_buffer *views[] = {&offsets, &ideal_codes, &rows,      &added,     &counts,
                          &spec_gain, &spec_cutoff, &gains, &order, &relevant,
                          &discounts, &base_ideal, &base_num_rel, &out_ideal, &out_num_rel};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
        PyBuffer_Release(views[v]);
    }
    return result;
}

/* Key the hash tables with 16 bytes from os.urandom. */
static int seed_hashes(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL) {
        return -1;
    }
    PyObject *key = PyObject_CallMethod(os, "urandom", "n", (Py_ssize_t)16);
    Py_DECREF(os);
    if (key == NULL) {
        return -1;
    }
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != 16) {
        Py_DECREF(key);
        PyErr_SetString(PyExc_RuntimeError, "os.urandom(16) did not give 16 bytes");
        return -1;
    }
    rm_seed_hash((const unsigned char *)PyBytes_AS_STRING(key));
    Py_DECREF(key);
    return 0;
}

static PyObject *set_hash_seed(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) != 16) {
        PyErr_SetString(PyExc_ValueError, "the seed is 16 bytes");
        return NULL;
    }
    rm_seed_hash((const unsigned char *)PyBytes_AS_STRING(arg));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"decode_events", (PyCFunction)(void (*)(void))decode_events, METH_VARARGS | METH_KEYWORDS,
     "decode_events(index, values, timestamps_ms, now_ms, max_depth, max_bytes, max_future_ms, "
     "segment_keys, use_event_time, depth, grade_codes, max_id_bytes=None, max_value_bytes=None) -> (status, event_ids, query_ids, "
     "rows, event_times_ms, segments, codes, lengths, added, added_counts). segments[i] is the "
     "tuple of the event's "
     "values of segment_keys (a sequence of str), in that order, '' for a key it lacks. "
     "status[i]: 0 accepted, 1 punted (decode it with monitor.ingest.events), 2 unknown query; the "
     "other lists hold the accepted events in "
     "order, codes their first `depth` grade codes (all if depth < 0) concatenated. "
     "grade_codes (bytes, inline grade -> code) lays each event's inline judgments over its "
     "unjudged documents, and `added` holds the codes of those grades, added_counts[i] of "
     "them event i's; None ignores inline judgments. An event with an id or doc id longer "
     "than max_id_bytes, or a segment value longer than max_value_bytes, as written, is "
     "punted."},
    {"measure_codes", (PyCFunction)measure_codes, METH_VARARGS,
     "measure_codes(codes, taken, lengths, rows, kinds, gain_of, cutoffs, ideal_of, gains, "
     "relevant, judged, discounts, ideals, n_ideals, num_rel, when_zero, out): fill `out` "
     "(rankings x columns, float64) with the measures of rankings given as grade codes; "
     "see monitor/scoring/plan.py."},
    {"ideal_rows", (PyCFunction)ideal_rows, METH_VARARGS,
     "ideal_rows(offsets, ideal_codes, rows, added, added_counts, spec_gain, spec_cutoff, gains, "
     "order, n_codes, relevant, discounts, base_ideal, base_num_rel, out_ideal, out_num_rel): "
     "the IDCG columns and num_rel of each ranking, its query's or, when its inline grades add "
     "to its ideal ranking, recomputed (every ranking's, from its codes, when base_ideal and "
     "base_num_rel are empty); see monitor/scoring/plan.py."},
    {"set_hash_seed", (PyCFunction)set_hash_seed, METH_O,
     "set_hash_seed(key: bytes) -> None: key the hash tables with these 16 bytes (random at "
     "import). For benchmarks that craft colliding ids; indexes built before keep their "
     "layout and must not be used after."},
    {"order_run", (PyCFunction)tr_order_run, METH_VARARGS,
     "order_run(data, float32, max_retrieved) -> (tag, {qid: (docno, ...)}) or None: a TREC "
     "run parsed and each query ordered as trec_eval orders it; None leaves the file to the "
     "Python path (see monitor/trec/run_order.h)."},
    {"parse_records", (PyCFunction)rb_parse_records, METH_VARARGS,
     "parse_records(buffer, pos, count, base_offset, first_timestamp, max_timestamp, "
     "log_append_time, topic, partition, record_type) -> (records, error): the records of "
     "one decompressed Kafka v2 record batch as record_type(topic, partition, offset, "
     "timestamp_ms, key, value); error is None or what is corrupt (see record_batch.h)."},
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
    if (PyType_Ready(&RunCoderType) < 0) {
        return NULL;
    }
    if (PyType_Ready(&JudgmentIndexType) < 0) {
        return NULL;
    }
    if (seed_hashes() < 0) {
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
