/* The scoring stage's CPython bindings: JudgmentIndex (the C lookup of grade codes, with
   judgments.h and qrels_scan.c), measure_codes (measure_kernel.c) and ideal_rows. Their Python
   signatures are monitor/_speedups.pyi. */
#include "index_binding.h"

#include "ascii_text.h"
#include "measure_kernel.h"
#include "qrels_scan.h"

#include <stdlib.h>

static void index_dealloc(JudgmentIndex *self) {
    rm_judgments_free(&self->j);
    Py_XDECREF(self->query_objects);
    Py_TYPE(self)->tp_free((PyObject *)self);
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
            const char *bytes = rm_utf8_of(key, &len, "a document or query id");
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

static PyObject *index_row_of(JudgmentIndex *self, PyObject *query_id) {
    Py_ssize_t len;
    const char *key = rm_utf8_of(query_id, &len, "query_id");
    if (key == NULL) {
        return NULL;
    }
    return PyLong_FromSsize_t(rm_index_row(self, key, (size_t)len));
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

/* dst[0..take) = the codes of items[0..take) for query `row`; an unjudged document whose hash
   passes `filter` (one bit per entry of `table`, 0: no table) takes its code in `table`.
   1: done, -1: an error. */
static int code_ranking(const JudgmentIndex *self, Py_ssize_t row, PyObject *const *items,
                        Py_ssize_t take, uint8_t *dst, const rm_inline_slot *table,
                        uint32_t mask, uint64_t filter) {
    for (Py_ssize_t d = 0; d < take; d++) {
        Py_ssize_t len;
        const char *doc = rm_utf8_of(items[d], &len, "a document id");
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
        uint8_t code = rm_index_code(self, row, doc, (size_t)len, h);
        if (code == 0 && (filter >> (h >> 58)) & 1) {
            code = rm_inline_slot_code(table, mask, doc, (size_t)len, h);
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
        if (rm_buffer_reserve(&codes, (size_t)take) < 0) {
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
    if (rm_buffer_reserve(slots, sizeof(rm_inline_slot) * size) < 0) {
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
        if (rm_index_code(self, row, bytes, (size_t)len, h) != 0) {
            continue; /* the evaluation set's grade wins */
        }
        if (rm_buffer_reserve(added, 1) < 0) {
            return -1;
        }
        ((uint8_t *)added->data)[added->size++] = code;
        (*n_added)++;
        table[rm_inline_slot_at(table, mask, bytes, (size_t)len, h)] =
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
        int state = rm_buffer_reserve(&codes, (size_t)take) < 0 ? -1 : 1;
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

static Py_ssize_t index_len(JudgmentIndex *self) { return (Py_ssize_t)self->j.queries; }

static PyMethodDef index_methods[] = {
    {"codes", (PyCFunction)index_codes, METH_VARARGS, "See monitor/_speedups.pyi."},
    {"inline_codes", (PyCFunction)index_inline_codes, METH_VARARGS, "See monitor/_speedups.pyi."},
    {"row_of", (PyCFunction)index_row_of, METH_O, "See monitor/_speedups.pyi."},
    {"from_qrels", (PyCFunction)index_from_qrels, METH_VARARGS | METH_CLASS,
     "See monitor/_speedups.pyi."},
    {"judgments", (PyCFunction)index_judgments, METH_NOARGS, "See monitor/_speedups.pyi."},
    {"ideal_codes", (PyCFunction)index_ideal_codes, METH_NOARGS, "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef index_getset[] = {
    {"code_grades", (getter)index_code_grades, NULL, "See monitor/_speedups.pyi.", NULL},
    {"query_ids", (getter)index_query_ids, NULL, "See monitor/_speedups.pyi.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods index_as_sequence = {.sq_length = (lenfunc)index_len};

PyTypeObject rm_JudgmentIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "monitor._speedups.JudgmentIndex",
    .tp_basicsize = sizeof(JudgmentIndex),
    .tp_dealloc = (destructor)index_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "See monitor/_speedups.pyi.",
    .tp_methods = index_methods,
    .tp_getset = index_getset,
    .tp_as_sequence = &index_as_sequence,
    .tp_new = index_new,
};

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

static PyObject *measure_codes(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *keywords[] = {"codes",     "taken",   "lengths", "rows",     "kinds",
                               "gain_of",   "cutoffs", "ideal_of", "gains",   "relevant",
                               "judged",    "discounts", "ideals", "n_ideals", "num_rel",
                               "when_zero", "out",     "tops",    "top_depth", "levels",
                               "n_levels",  NULL};
    Py_buffer codes = {0}, taken = {0}, lengths = {0}, rows = {0}, kinds = {0}, gain_of = {0};
    Py_buffer cutoffs = {0}, ideal_of = {0}, gains = {0}, relevant = {0}, judged = {0};
    Py_buffer discounts = {0}, ideals = {0}, num_rel = {0}, out = {0}, tops = {0};
    Py_buffer levels = {0}, n_levels = {0};
    Py_ssize_t n_ideals, top_depth = 0;
    double when_zero;
    PyObject *result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     "y*y*y*y*y*y*y*y*y*y*y*y*y*ny*dw*|y*ny*y*:measure_codes",
                                     keywords,
                                     &codes, &taken,
                          &lengths, &rows, &kinds, &gain_of, &cutoffs, &ideal_of, &gains,
                          &relevant, &judged, &discounts, &ideals, &n_ideals, &num_rel,
                          &when_zero, &out, &tops, &top_depth, &levels, &n_levels)) {
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
        check_buffer(&out, 8, n * columns, "out") < 0 || top_depth < 0 ||
        (top_depth && check_buffer(&tops, 8, queries * n_gains * top_depth, "tops") < 0) ||
        (top_depth && check_buffer(&levels, 8 * RM_CODES, n_gains, "levels") < 0) ||
        (top_depth && check_buffer(&n_levels, 4, n_gains, "n_levels") < 0)) {
        goto done;
    }
    for (Py_ssize_t g = 0; top_depth && g < n_gains; g++) {
        int32_t count = ((const int32_t *)n_levels.buf)[g];
        if (count < 0 || count > RM_CODES) {
            PyErr_Format(PyExc_ValueError, "n_levels: %d levels for gain %zd", (int)count, g);
            goto done;
        }
    }
    const int64_t *taken_of = taken.buf, *length_of = lengths.buf, *row_of = rows.buf;
    const int32_t *kind_of = kinds.buf, *gain_index = gain_of.buf, *ideal_index = ideal_of.buf;
    const int64_t *cutoff_of = cutoffs.buf;
    for (Py_ssize_t c = 0; c < columns; c++) {
        if (kind_of[c] < 0 || kind_of[c] >= RM_KINDS) {
            PyErr_Format(PyExc_ValueError, "unknown measure kind %d", (int)kind_of[c]);
            goto done;
        }
        int bound = kind_of[c] == RM_NDCG_UPPER || kind_of[c] == RM_NDCG_LOWER;
        int dcg = kind_of[c] == RM_NDCG || kind_of[c] == RM_DCG || bound;
        if ((dcg && (gain_index[c] < 0 || gain_index[c] >= n_gains)) ||
            (bound && (cutoff_of[c] < 1 || cutoff_of[c] > top_depth)) ||
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
        .tops = top_depth ? tops.buf : NULL,
        .top_depth = (size_t)top_depth,
        .levels = top_depth ? levels.buf : NULL,
        .n_levels = top_depth ? n_levels.buf : NULL,
    };
    size_t slots = (size_t)(head ? head : 1);
    rm_scratch scratch = {
        .dcg = PyMem_Malloc(sizeof(double) * slots * (size_t)(n_gains ? n_gains : 1)),
        .rel = PyMem_Malloc(sizeof(int64_t) * slots),
        .judged = PyMem_Malloc(sizeof(int64_t) * slots),
    };
    if (scratch.dcg == NULL || scratch.rel == NULL || scratch.judged == NULL ||
        rm_bounds_scratch(&scratch, &plan) < 0) {
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
    free(scratch.filled);
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&tops);
    PyBuffer_Release(&levels);
    PyBuffer_Release(&n_levels);
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
static PyObject *ideal_rows(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *keywords[] = {"offsets",    "ideal_codes", "rows",         "added",
                               "added_counts", "spec_gain", "spec_cutoff",  "gains",
                               "order",      "n_codes",     "relevant",     "discounts",
                               "base_ideal", "base_num_rel", "out_ideal",   "out_num_rel",
                               NULL};
    Py_buffer offsets = {0}, ideal_codes = {0}, rows = {0}, added = {0}, counts = {0};
    Py_buffer spec_gain = {0}, spec_cutoff = {0}, gains = {0}, order = {0}, relevant = {0};
    Py_buffer discounts = {0}, base_ideal = {0}, base_num_rel = {0}, out_ideal = {0};
    Py_buffer out_num_rel = {0};
    Py_ssize_t n_codes;
    PyObject *result = NULL;
    double *sorted = NULL;
    uint8_t *merged = NULL;
    uint32_t code_counts[RM_CODES] = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*y*y*y*y*y*ny*y*y*y*w*w*:ideal_rows",
                                     keywords, &offsets,
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

static PyMethodDef scoring_functions[] = {
    {"measure_codes", (PyCFunction)(void (*)(void))measure_codes, METH_VARARGS | METH_KEYWORDS,
     "See monitor/_speedups.pyi."},
    {"ideal_rows", (PyCFunction)(void (*)(void))ideal_rows, METH_VARARGS | METH_KEYWORDS,
     "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

int rm_add_scoring(PyObject *module) {
    if (PyType_Ready(&rm_JudgmentIndexType) < 0) {
        return -1;
    }
    if (PyModule_AddType(module, &rm_JudgmentIndexType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, scoring_functions);
}
