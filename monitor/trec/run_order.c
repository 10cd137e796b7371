/* See run_order.h: a TREC run file parsed, grouped and ordered in C. */
#include "run_order.h"

#include "../_native/ascii_text.h"
#include "../scoring/judgments.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *doc;
    uint32_t len;
    uint32_t query;
    double score;
} tr_line;

typedef struct {
    const char **names; /* per query index: its id, in first-appearance order */
    uint32_t *lengths;
    uint32_t count;
    uint32_t capacity;
    int64_t *slots; /* open addressing: query index + 1, 0 empty */
    size_t n_slots;
} tr_queries;

enum { TR_OK = 0, TR_PUNT = 1, TR_NO_MEMORY = 2 };

static int is_space(unsigned char c) {
    /* C's isspace in the C locale, as trec_eval splits its fields. */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int queries_grow(tr_queries *q) {
    size_t n_slots = q->n_slots ? q->n_slots * 2 : 1024;
    int64_t *slots = calloc(n_slots, sizeof *slots);
    if (slots == NULL) {
        return TR_NO_MEMORY;
    }
    for (uint32_t i = 0; i < q->count; i++) {
        size_t at = (size_t)rm_hash(q->names[i], q->lengths[i]) & (n_slots - 1);
        while (slots[at]) {
            at = (at + 1) & (n_slots - 1);
        }
        slots[at] = (int64_t)i + 1;
    }
    free(q->slots);
    q->slots = slots;
    q->n_slots = n_slots;
    return TR_OK;
}

/* The index of query `name`, a new one if unseen; -1 when out of memory. */
static int64_t query_index(tr_queries *q, const char *name, uint32_t len) {
    if ((size_t)(q->count + 1) * 2 > q->n_slots && queries_grow(q) != TR_OK) {
        return -1;
    }
    size_t at = (size_t)rm_hash(name, len) & (q->n_slots - 1);
    while (q->slots[at]) {
        uint32_t i = (uint32_t)(q->slots[at] - 1);
        if (q->lengths[i] == len && memcmp(q->names[i], name, len) == 0) {
            return i;
        }
        at = (at + 1) & (q->n_slots - 1);
    }
    if (q->count == q->capacity) {
        uint32_t capacity = q->capacity ? q->capacity * 2 : 256;
        const char **names = realloc((void *)q->names, capacity * sizeof *names);
        if (names == NULL) {
            return -1;
        }
        q->names = names;
        uint32_t *lengths = realloc(q->lengths, capacity * sizeof *lengths);
        if (lengths == NULL) {
            return -1;
        }
        q->lengths = lengths;
        q->capacity = capacity;
    }
    q->names[q->count] = name;
    q->lengths[q->count] = len;
    q->slots[at] = (int64_t)q->count + 1;
    return q->count++;
}

/* Clinger's fast path: [+-]digits[.digits] with at most 15 digits is the exact integer of
   its digits divided by an exact power of ten, one correctly rounded division: the double
   strtod (and Python's float) gives. 0 when the token is not of that form. */
static int plain_decimal(const char *text, size_t len, double *out) {
    static const double powers[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    size_t i = 0;
    int negative = 0;
    if (i < len && (text[i] == '+' || text[i] == '-')) {
        negative = text[i] == '-';
        i++;
    }
    uint64_t mantissa = 0;
    int digits = 0, fraction = 0, seen_point = 0;
    for (; i < len; i++) {
        char c = text[i];
        if (c >= '0' && c <= '9') {
            mantissa = mantissa * 10 + (uint64_t)(c - '0');
            digits++;
            fraction += seen_point;
        } else if (c == '.' && !seen_point) {
            seen_point = 1;
        } else {
            return 0;
        }
    }
    if (digits == 0 || digits > 15) {
        return 0;
    }
    double value = (double)mantissa / powers[fraction];
    *out = negative ? -value : value;
    return 1;
}

/* A score token read as Python's float() reads it, or TR_PUNT for anything unusual. */
static int read_score(const char *text, size_t len, double *out) {
    char copy[64];
    if (len == 0 || len >= sizeof copy) {
        return TR_PUNT;
    }
    if (plain_decimal(text, len, out)) {
        return TR_OK;
    }
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (!((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' ||
              c == 'E')) {
            return TR_PUNT;
        }
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    char *end = NULL;
    *out = strtod(copy, &end);
    return end == copy + len ? TR_OK : TR_PUNT;
}

static int docno_order(const tr_line *a, const tr_line *b) {
    uint32_t shorter = a->len < b->len ? a->len : b->len;
    int cmp = memcmp(a->doc, b->doc, shorter);
    if (cmp == 0) {
        cmp = (a->len > b->len) - (a->len < b->len);
    }
    return cmp;
}

static int by_trec_order(const void *x, const void *y) {
    const tr_line *a = x, *b = y;
    if (a->score > b->score) {
        return -1;
    }
    if (a->score < b->score) {
        return 1;
    }
    return -docno_order(a, b); /* ties: docno descending */
}

/* Split the run into lines; fills lines/tag; TR_PUNT or TR_NO_MEMORY on the way out. */
static int scan(const char *data, size_t size, int float32, tr_queries *queries, tr_line **out,
                size_t *n_out, const char **tag, size_t *tag_len) {
    size_t capacity = 1;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + size - p))) != NULL; p++) {
        capacity++;
    }
    tr_line *lines = malloc(capacity * sizeof *lines);
    if (lines == NULL) {
        return TR_NO_MEMORY;
    }
    size_t n = 0;
    const char *p = data, *end = data + size;
    while (p < end) {
        const char *line_end = memchr(p, '\n', (size_t)(end - p));
        if (line_end == NULL) {
            line_end = end;
        }
        const char *field[6];
        size_t field_len[6];
        int fields = 0;
        const char *c = p;
        while (c < line_end) {
            while (c < line_end && is_space((unsigned char)*c)) {
                c++;
            }
            if (c == line_end) {
                break;
            }
            const char *start = c;
            while (c < line_end && !is_space((unsigned char)*c)) {
                if ((unsigned char)*c >= 0x80) {
                    free(lines);
                    return TR_PUNT;
                }
                c++;
            }
            if (fields < 6) {
                field[fields] = start;
                field_len[fields] = (size_t)(c - start);
            }
            fields++;
        }
        p = line_end + 1;
        if (fields == 0) {
            continue;
        }
        if (fields < 6 || field_len[0] > UINT32_MAX || field_len[2] > UINT32_MAX) {
            free(lines);
            return TR_PUNT;
        }
        double score;
        if (read_score(field[4], field_len[4], &score) != TR_OK) {
            free(lines);
            return TR_PUNT;
        }
        int64_t query = query_index(queries, field[0], (uint32_t)field_len[0]);
        if (query < 0) {
            free(lines);
            return TR_NO_MEMORY;
        }
        if (n == 0) {
            *tag = field[5];
            *tag_len = field_len[5];
        }
        lines[n].doc = field[2];
        lines[n].len = (uint32_t)field_len[2];
        lines[n].query = (uint32_t)query;
        lines[n].score = float32 ? (double)(float)score : score;
        n++;
    }
    *out = lines;
    *n_out = n;
    return TR_OK;
}

/* TR_PUNT when a docno is twice in the group: an open-addressing set of its docnos (a
   sort would cost as much as the ordering itself). */
static int check_unique(const tr_line *group, size_t size) {
    uint32_t local[512];
    size_t n_slots = 16;
    while (n_slots < 2 * size) {
        n_slots *= 2;
    }
    uint32_t *slots = n_slots <= 512 ? local : malloc(n_slots * sizeof *slots);
    if (slots == NULL) {
        return TR_NO_MEMORY;
    }
    memset(slots, 0, n_slots * sizeof *slots);
    int status = TR_OK;
    for (size_t i = 0; i < size && status == TR_OK; i++) {
        size_t at = (size_t)rm_hash(group[i].doc, group[i].len) & (n_slots - 1);
        while (slots[at]) {
            const tr_line *other = &group[slots[at] - 1];
            if (docno_order(other, &group[i]) == 0) {
                status = TR_PUNT;
                break;
            }
            at = (at + 1) & (n_slots - 1);
        }
        slots[at] = (uint32_t)i + 1;
    }
    if (slots != local) {
        free(slots);
    }
    return status;
}

/* Lines grouped by query (counting sort), each group in trec_eval's order; `starts` has
   count + 1 entries. TR_PUNT when a group holds a docno twice. */
static int group_and_order(tr_line *lines, size_t n, uint32_t count, tr_line **grouped,
                           size_t **starts_out) {
    size_t *starts = calloc((size_t)count + 1, sizeof *starts);
    tr_line *out = malloc((n ? n : 1) * sizeof *out);
    size_t *fill = malloc(((size_t)count + 1) * sizeof *fill);
    if (starts == NULL || out == NULL || fill == NULL) {
        free(starts);
        free(out);
        free(fill);
        return TR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        starts[lines[i].query + 1]++;
    }
    for (uint32_t q = 0; q < count; q++) {
        starts[q + 1] += starts[q];
    }
    memcpy(fill, starts, ((size_t)count + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        out[fill[lines[i].query]++] = lines[i];
    }
    free(fill);
    int status = TR_OK;
    for (uint32_t q = 0; q < count && status == TR_OK; q++) {
        tr_line *group = out + starts[q];
        size_t size = starts[q + 1] - starts[q];
        status = check_unique(group, size);
        qsort(group, size, sizeof *group, by_trec_order);
    }
    if (status != TR_OK) {
        free(starts);
        free(out);
        return status;
    }
    *grouped = out;
    *starts_out = starts;
    return TR_OK;
}

static PyObject *rankings_dict(const tr_queries *queries, const tr_line *grouped,
                               const size_t *starts, long long max_retrieved) {
    PyObject *rankings = PyDict_New();
    if (rankings == NULL) {
        return NULL;
    }
    for (uint32_t q = 0; q < queries->count; q++) {
        size_t size = starts[q + 1] - starts[q];
        if (max_retrieved >= 0 && (unsigned long long)max_retrieved < size) {
            size = (size_t)max_retrieved;
        }
        PyObject *docs = PyTuple_New((Py_ssize_t)size);
        PyObject *qid = rm_ascii_text(queries->names[q], queries->lengths[q]);
        int failed = docs == NULL || qid == NULL;
        for (size_t i = 0; !failed && i < size; i++) {
            const tr_line *line = grouped + starts[q] + i;
            PyObject *doc = rm_ascii_text(line->doc, line->len);
            if (doc == NULL) {
                failed = 1;
            } else {
                PyTuple_SET_ITEM(docs, (Py_ssize_t)i, doc);
            }
        }
        if (!failed && PyDict_SetItem(rankings, qid, docs) < 0) {
            failed = 1;
        }
        Py_XDECREF(docs);
        Py_XDECREF(qid);
        if (failed) {
            Py_DECREF(rankings);
            return NULL;
        }
    }
    return rankings;
}

PyObject *tr_order_run(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    int float32;
    long long max_retrieved;
    if (!PyArg_ParseTuple(args, "y*pL", &data, &float32, &max_retrieved)) {
        return NULL;
    }
    tr_queries queries = {0};
    tr_line *lines = NULL, *grouped = NULL;
    size_t n = 0, *starts = NULL, tag_len = 0;
    const char *tag = "";
    PyObject *result = NULL;
    int status;
    Py_BEGIN_ALLOW_THREADS;
    status = scan(data.buf, (size_t)data.len, float32, &queries, &lines, &n, &tag, &tag_len);
    if (status == TR_OK) {
        status = group_and_order(lines, n, queries.count, &grouped, &starts);
        free(lines); /* the grouped copy holds every line now */
        lines = NULL;
    }
    Py_END_ALLOW_THREADS;
    if (status == TR_NO_MEMORY) {
        PyErr_NoMemory();
    } else if (status == TR_PUNT) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *rankings = rankings_dict(&queries, grouped, starts, max_retrieved);
        PyObject *tag_text = rankings ? rm_ascii_text(tag, tag_len) : NULL;
        if (rankings != NULL && tag_text != NULL) {
            result = PyTuple_Pack(2, tag_text, rankings);
        }
        Py_XDECREF(rankings);
        Py_XDECREF(tag_text);
    }
    free(lines);
    free(grouped);
    free(starts);
    free((void *)queries.names);
    free(queries.lengths);
    free(queries.slots);
    PyBuffer_Release(&data);
    return result;
}
