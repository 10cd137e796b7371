/* The ingest stage's CPython binding: decode_events, a poll's record values scanned in C
   (event_scan.c) into accepted events with their grade codes. Its Python signature is
   monitor/_speedups.pyi; the status of each record is exported as SCAN_ACCEPTED,
   SCAN_PUNTED and SCAN_UNKNOWN_QUERY. */
#include "../scoring/index_binding.h"

#include "event_scan.h"

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
    if (rm_buffer_grow(&job->added, ev->n_judgments, 1) < 0) {
        return -1;
    }
    for (uint32_t j = 0; j < ev->n_judgments; j++) {
        const char *doc = buf + ev->judgment_docs[j].off;
        size_t len = ev->judgment_docs[j].len;
        uint64_t h = rm_hash(doc, len);
        uint32_t i = rm_inline_slot_at(job->judged, *mask, doc, len, h);
        if (job->judged[i].doc != NULL) {
            job->added.size = start;
            return 0; /* listed twice: Python keeps the last grade */
        }
        uint8_t code = 0;
        if (rm_index_code(job->index, row, doc, len, h) == 0) {
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
        Py_ssize_t row = rm_index_row(job->index, buf + ev.query_id.off, ev.query_id.len);
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
        if (rm_buffer_grow(&job->codes, take, 1) < 0) {
            return -1;
        }
        uint8_t *dst = (uint8_t *)job->codes.data + job->codes.size;
        for (uint32_t d = 0; d < take; d++) {
            uint64_t h = job->set.hashes[d];
            uint8_t code = rm_index_code(job->index, row, buf + job->docs[d].off, job->docs[d].len, h);
            if (code == 0 && (filter >> (h >> 58)) & 1) {
                code = rm_inline_slot_code(job->judged, mask, buf + job->docs[d].off,
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
                                     &rm_JudgmentIndexType, &index_arg, &values_arg, &timestamps_arg,
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
        keys[j].bytes = rm_utf8_of(PyList_GET_ITEM(keys_seq, j), &keys[j].len, "a segment key");
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


static PyMethodDef ingest_functions[] = {
    {"decode_events", (PyCFunction)(void (*)(void))decode_events, METH_VARARGS | METH_KEYWORDS,
     "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

int rm_add_ingest(PyObject *module) {
    if (PyModule_AddIntConstant(module, "SCAN_ACCEPTED", STATUS_ACCEPTED) < 0 ||
        PyModule_AddIntConstant(module, "SCAN_PUNTED", STATUS_PUNT) < 0 ||
        PyModule_AddIntConstant(module, "SCAN_UNKNOWN_QUERY", STATUS_UNKNOWN_QUERY) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, ingest_functions);
}
