/* See run_order.h: a TREC run file parsed, grouped and ordered in C. */
#include "run_order.h"

#include "../scoring/ascii_text.h"
#include "../scoring/id_table.h"
#include "../scoring/judgments.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <io.h>
#define read _read
#define TR_PARTS 0
#else
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#define TR_PARTS 1 /* a large file read in two parts at once (pread, two threads) */
#endif

typedef struct {
    const char *doc;
    uint32_t len;
    uint32_t query;
    double score;
    uint64_t hash; /* rm_hash of the docno, set by check_unique */
} tr_line;

enum { TR_OK = 0, TR_PUNT = 1, TR_NO_MEMORY = 2, TR_SPLIT = 3 /* the coder: a query in two blocks */ };

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

/* Byte classes for splitting fields (ascii_text.h): C's isspace in the C locale, as trec_eval
   splits its fields, '\n' ending the line; outside ASCII the file is given up. */
static const unsigned char tr_class[256] = {
    ['\t'] = RM_FIELD_BREAK, ['\n'] = RM_LINE_BREAK, ['\v'] = RM_FIELD_BREAK,
    ['\f'] = RM_FIELD_BREAK, ['\r'] = RM_FIELD_BREAK, [' '] = RM_FIELD_BREAK,
    RM_GIVE_UP_FROM_0X80,
};

/* One line read, up to its '\n' or `end` (*line_end says which): TR_OK with its fields,
   TR_PUNT (a line we do not decide), or blank (1 in *blank). */
static int read_line(const char *p, const char *end, const char *field[6], size_t field_len[6],
                     double *score, int *blank, const char **line_end) {
    int fields = rm_split_line(p, end, tr_class, field, field_len, 6, line_end);
    *blank = fields == 0;
    if (fields <= 0) {
        return fields == 0 ? TR_OK : TR_PUNT;
    }
    if (fields < 6 || field_len[0] > UINT32_MAX || field_len[2] > UINT32_MAX) {
        return TR_PUNT;
    }
    return read_score(field[4], field_len[4], score);
}

/* Split the run into lines; fills lines/tag; TR_PUNT or TR_NO_MEMORY on the way out. */
static int scan(const char *data, size_t size, int float32, rm_id_table *queries, tr_line **out,
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
        const char *field[6], *line_end;
        size_t field_len[6];
        double score;
        int blank;
        int status = read_line(p, end, field, field_len, &score, &blank, &line_end);
        p = line_end + 1;
        if (status != TR_OK) {
            free(lines);
            return status;
        }
        if (blank) {
            continue;
        }
        int64_t query = rm_id_index(queries, field[0], (uint32_t)field_len[0], NULL);
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

/* A group in trec_eval's order; most runs list each query by rank already: no sort then. */
static void order_group(tr_line *group, size_t size) {
    for (size_t i = 1; i < size; i++) {
        if (by_trec_order(&group[i - 1], &group[i]) > 0) {
            qsort(group, size, sizeof *group, by_trec_order);
            return;
        }
    }
}

/* TR_PUNT when a docno is twice in the group: an open-addressing set of its docnos (a
   sort would cost as much as the ordering itself). */
static int check_unique(tr_line *group, size_t size) {
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
        group[i].hash = rm_hash(group[i].doc, group[i].len);
        size_t at = (size_t)group[i].hash & (n_slots - 1);
        while (slots[at]) {
            const tr_line *other = &group[slots[at] - 1];
            if (other->hash == group[i].hash && docno_order(other, &group[i]) == 0) {
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
        order_group(group, size);
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

/* min(size, limit), a limit < 0 being none (-M, the lookup depth). */
static size_t at_most(size_t size, long long limit) {
    return limit >= 0 && (unsigned long long)limit < size ? (size_t)limit : size;
}

/* dst[0..take) = the grade codes of a query's first `take` ordered lines (its row >= 0). */
static void code_lines(const tr_line *lines, size_t take, int64_t row, const void *ctx,
                       tr_code_fn code_of, uint8_t *dst) {
    for (size_t i = 0; i < take; i++) {
        dst[i] = code_of(ctx, row, lines[i].doc, lines[i].len, lines[i].hash);
    }
}

/* A whole run parsed, grouped by query and ordered (tr_order_run and tr_code_run). */
typedef struct {
    rm_id_table queries;
    tr_line *grouped;
    size_t *starts;
    const char *tag;
    size_t tag_len;
} tr_parsed;

/* scan, then group_and_order, without the GIL: TR_OK, TR_PUNT or TR_NO_MEMORY. */
static int parse_and_group(const char *data, size_t size, int float32, tr_parsed *run) {
    tr_line *lines = NULL;
    size_t n = 0;
    int status;
    run->tag = "";
    Py_BEGIN_ALLOW_THREADS;
    status = scan(data, size, float32, &run->queries, &lines, &n, &run->tag, &run->tag_len);
    if (status == TR_OK) {
        status = group_and_order(lines, n, run->queries.count, &run->grouped, &run->starts);
    }
    free(lines); /* the grouped copy holds every line now */
    Py_END_ALLOW_THREADS;
    return status;
}

static void free_parsed(tr_parsed *run) {
    free(run->grouped);
    free(run->starts);
    rm_id_table_free(&run->queries);
}

static PyObject *rankings_dict(const rm_id_table *queries, const tr_line *grouped,
                               const size_t *starts, long long max_retrieved) {
    PyObject *rankings = PyDict_New();
    if (rankings == NULL) {
        return NULL;
    }
    for (uint32_t q = 0; q < queries->count; q++) {
        size_t size = starts[q + 1] - starts[q];
        size = at_most(size, max_retrieved);
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
    tr_parsed run = {0};
    PyObject *result = NULL;
    int status = parse_and_group(data.buf, (size_t)data.len, float32, &run);
    if (status == TR_NO_MEMORY) {
        PyErr_NoMemory();
    } else if (status == TR_PUNT) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *rankings = rankings_dict(&run.queries, run.grouped, run.starts, max_retrieved);
        PyObject *tag_text = rankings ? rm_ascii_text(run.tag, run.tag_len) : NULL;
        if (rankings != NULL && tag_text != NULL) {
            result = PyTuple_Pack(2, tag_text, rankings);
        }
        Py_XDECREF(rankings);
        Py_XDECREF(tag_text);
    }
    free_parsed(&run);
    PyBuffer_Release(&data);
    return result;
}

/* (qids, rows, codes, lengths) of the grouped, ordered run: see tr_code_run. */
static PyObject *coded_queries(const rm_id_table *queries, const tr_line *grouped,
                               const size_t *starts, long long max_retrieved, long long depth,
                               const void *ctx, tr_row_fn row_of, tr_code_fn code_of) {
    PyObject *qids = PyList_New(queries->count), *rows = PyList_New(queries->count);
    PyObject *lengths = PyList_New(queries->count), *out = NULL;
    size_t total = 0;
    for (uint32_t q = 0; q < queries->count; q++) {
        size_t size = starts[q + 1] - starts[q];
        total += at_most(at_most(size, max_retrieved), depth);
    }
    PyObject *codes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (qids == NULL || rows == NULL || lengths == NULL || codes == NULL) {
        goto done;
    }
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(codes);
    size_t written = 0;
    for (uint32_t q = 0; q < queries->count; q++) {
        size_t size = at_most(starts[q + 1] - starts[q], max_retrieved);
        int64_t row = row_of(ctx, queries->names[q], queries->lengths[q]);
        PyObject *qid = rm_ascii_text(queries->names[q], queries->lengths[q]);
        PyObject *row_number = PyLong_FromLongLong(row);
        PyObject *length = PyLong_FromSize_t(size);
        if (qid == NULL || row_number == NULL || length == NULL) {
            Py_XDECREF(qid);
            Py_XDECREF(row_number);
            Py_XDECREF(length);
            goto done;
        }
        PyList_SET_ITEM(qids, q, qid);
        PyList_SET_ITEM(rows, q, row_number);
        PyList_SET_ITEM(lengths, q, length);
        if (row < 0) {
            continue;
        }
        size_t take = at_most(size, depth);
        code_lines(grouped + starts[q], take, row, ctx, code_of, dst + written);
        written += take;
    }
    if (_PyBytes_Resize(&codes, (Py_ssize_t)written) == 0) {
        out = PyTuple_Pack(4, qids, rows, codes, lengths);
    }
done:
    Py_XDECREF(qids);
    Py_XDECREF(rows);
    Py_XDECREF(lengths);
    Py_XDECREF(codes);
    return out;
}

PyObject *tr_code_run(const char *data, size_t size, int float32, long long max_retrieved,
                      long long depth, const void *ctx, tr_row_fn row_of, tr_code_fn code_of) {
    tr_parsed run = {0};
    PyObject *result = NULL;
    int status = parse_and_group(data, size, float32, &run);
    if (status == TR_NO_MEMORY) {
        PyErr_NoMemory();
    } else if (status == TR_PUNT) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *coded = coded_queries(&run.queries, run.grouped, run.starts, max_retrieved, depth,
                                        ctx, row_of, code_of);
        PyObject *tag_text = coded ? rm_ascii_text(run.tag, run.tag_len) : NULL;
        if (coded != NULL && tag_text != NULL) {
            result = PyTuple_Pack(5, tag_text, PyTuple_GET_ITEM(coded, 0),
                                  PyTuple_GET_ITEM(coded, 1), PyTuple_GET_ITEM(coded, 2),
                                  PyTuple_GET_ITEM(coded, 3));
        }
        Py_XDECREF(coded);
        Py_XDECREF(tag_text);
    }
    free_parsed(&run);
    return result;
}

/* ---------------------------------------------------------------- the streaming coder */

typedef struct {
    char *data;
    size_t size, capacity;
} tr_bytes;

/* Room for `size` more bytes: TR_OK or TR_NO_MEMORY. */
static int bytes_reserve(tr_bytes *b, size_t size) {
    if (b->size + size <= b->capacity) {
        return TR_OK;
    }
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + size) {
        capacity *= 2;
    }
    char *grown = realloc(b->data, capacity);
    if (grown == NULL) {
        return TR_NO_MEMORY;
    }
    b->data = grown;
    b->capacity = capacity;
    return TR_OK;
}

/* `size` bytes appended (NULL `data`: room only, the caller fills it). */
static inline int bytes_add(tr_bytes *b, const void *data, size_t size) {
    if (b->size + size > b->capacity && bytes_reserve(b, size) != TR_OK) {
        return TR_NO_MEMORY;
    }
    if (size && data != NULL) {
        memcpy(b->data + b->size, data, size);
    }
    b->size += size;
    return TR_OK;
}

/* A line of the query being read: its docno is `text.data + off`. */
typedef struct {
    double score;
    size_t off;
    uint32_t len;
} tr_pending;

struct tr_coder {
    int float32;
    long long max_retrieved, depth;
    const void *ctx;
    tr_row_fn row_of;
    tr_code_fn code_of;
    int status;
    tr_bytes text;      /* the fed bytes still needed: the current query's lines, then the rest */
    size_t parsed;      /* text[0..parsed) is read; the rest is an unfinished line */
    size_t seen_to;     /* text[parsed..seen_to) is known to hold no '\n' (when > parsed) */
    tr_bytes names;     /* every query id, one after another */
    rm_id_table queries; /* its names point into `names` (remade whenever that moves) */
    size_t *name_offsets;
    int64_t current;    /* the query whose lines are being read, -1 before the first */
    tr_bytes pending;   /* its lines (tr_pending) */
    tr_bytes group;     /* scratch: the same lines as tr_line, to order and code */
    tr_bytes tag;
    int has_tag;
    tr_bytes codes, rows, lengths; /* per query, in order: codes; int64 row; int64 length */
};

tr_coder *tr_coder_new(int float32, long long max_retrieved, long long depth, const void *ctx,
                       tr_row_fn row_of, tr_code_fn code_of) {
    tr_coder *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->float32 = float32;
        c->max_retrieved = max_retrieved;
        c->depth = depth;
        c->ctx = ctx;
        c->row_of = row_of;
        c->code_of = code_of;
        c->current = -1;
    }
    return c;
}

void tr_coder_free(tr_coder *c) {
    if (c == NULL) {
        return;
    }
    free(c->text.data);
    free(c->names.data);
    rm_id_table_free(&c->queries);
    free(c->name_offsets);
    free(c->pending.data);
    free(c->group.data);
    free(c->tag.data);
    free(c->codes.data);
    free(c->rows.data);
    free(c->lengths.data);
    free(c);
}

/* The finished query `current`: checked, ordered, cut and coded. */
static int code_group(tr_coder *c) {
    if (c->current < 0) {
        return TR_OK;
    }
    size_t size = c->pending.size / sizeof(tr_pending);
    const tr_pending *pending = (const tr_pending *)c->pending.data;
    c->group.size = 0;
    if (bytes_add(&c->group, NULL, size * sizeof(tr_line)) != TR_OK) {
        return TR_NO_MEMORY;
    }
    tr_line *group = (tr_line *)c->group.data;
    for (size_t i = 0; i < size; i++) {
        group[i].doc = c->text.data + pending[i].off;
        group[i].len = pending[i].len;
        group[i].query = (uint32_t)c->current;
        group[i].score = pending[i].score;
    }
    int status = check_unique(group, size);
    if (status == TR_OK) {
        order_group(group, size);
        size = at_most(size, c->max_retrieved);
        const char *qid = c->names.data + c->name_offsets[c->current];
        int64_t row = c->row_of(c->ctx, qid, c->queries.lengths[c->current]);
        int64_t length = (int64_t)size;
        status = bytes_add(&c->rows, &row, sizeof row);
        if (status == TR_OK) {
            status = bytes_add(&c->lengths, &length, sizeof length);
        }
        size_t take = at_most(size, c->depth);
        if (status == TR_OK && row >= 0 && (status = bytes_add(&c->codes, NULL, take)) == TR_OK) {
            code_lines(group, take, row, c->ctx, c->code_of,
                       (uint8_t *)c->codes.data + c->codes.size - take);
        }
    }
    c->pending.size = 0;
    return status;
}

/* The index of query `name` (a copy of it kept in `names`), a new one if unseen. */
static int64_t coder_query(tr_coder *c, const char *name, uint32_t len, int *is_new) {
    /* Probe with the line's bytes; a new id is then copied and pointed at. */
    int64_t index = rm_id_index(&c->queries, name, len, is_new);
    if (index < 0 || !*is_new) {
        return index;
    }
    size_t *offsets = realloc(c->name_offsets, c->queries.capacity * sizeof *offsets);
    if (offsets == NULL) {
        return -1;
    }
    c->name_offsets = offsets;
    offsets[index] = c->names.size;
    const char *before_data = c->names.data;
    if (bytes_add(&c->names, name, len) != TR_OK) {
        return -1;
    }
    if (c->names.data != before_data) { /* moved as it grew: remake every pointer */
        for (uint32_t i = 0; i < (uint32_t)index; i++) {
            c->queries.names[i] = c->names.data + offsets[i];
        }
    }
    c->queries.names[index] = c->names.data + offsets[index];
    return index;
}

/* A line's fields (pointing into `text`) taken into the query being read; a new query codes
   the one before. */
static int coder_take(tr_coder *c, const char *field[6], const size_t field_len[6],
                      double score) {
    int is_new = 0, status;
    int64_t query = c->current >= 0 && c->queries.lengths[c->current] == field_len[0] &&
                            memcmp(c->queries.names[c->current], field[0], field_len[0]) == 0
                        ? c->current
                        : coder_query(c, field[0], (uint32_t)field_len[0], &is_new);
    if (query < 0) {
        return TR_NO_MEMORY;
    }
    if (query != c->current) {
        if (!is_new) {
            return TR_SPLIT; /* the query's lines are not all in one block */
        }
        if ((status = code_group(c)) != TR_OK) {
            return status;
        }
        c->current = query;
    }
    if (!c->has_tag) {
        c->has_tag = 1;
        if (bytes_add(&c->tag, field[5], field_len[5]) != TR_OK) {
            return TR_NO_MEMORY;
        }
    }
    tr_pending line = {c->float32 ? (double)(float)score : score,
                       (size_t)(field[2] - c->text.data), (uint32_t)field_len[2]};
    return bytes_add(&c->pending, &line, sizeof line);
}

/* Every whole line of text[parsed..] read and taken; an unfinished last line waits, unless
   `last` (the end of the file ends it). */
static int coder_read(tr_coder *c, int last) {
    const char *p = c->text.data + c->parsed, *end = c->text.data + c->text.size;
    int status = TR_OK;
    if (!last && c->seen_to > c->parsed) {
        /* The unfinished line was split once already: until a chunk brings its '\n', only
           the new bytes are looked at, so a line spanning many chunks costs linear time. */
        const char *from = c->text.data + c->seen_to;
        if (memchr(from, '\n', (size_t)(end - from)) == NULL) {
            c->seen_to = c->text.size;
            return TR_OK;
        }
    }
    while (status == TR_OK && p < end) {
        const char *field[6], *line_end;
        size_t field_len[6];
        double score;
        int blank;
        status = read_line(p, end, field, field_len, &score, &blank, &line_end);
        if (line_end == end && !last) { /* no '\n' yet: the rest waits for the next chunk */
            c->seen_to = c->text.size;
            return TR_OK;
        }
        if (status == TR_OK && !blank) {
            status = coder_take(c, field, field_len, score);
        }
        p = line_end + 1;
        c->parsed = (size_t)(p - c->text.data);
    }
    return status;
}

/* Drop the text no line needs any more: all before the current query's first docno (or
   before the unfinished line when no line of it is pending). */
static void coder_compact(tr_coder *c) {
    size_t keep = c->parsed < c->text.size ? c->parsed : c->text.size;
    size_t n = c->pending.size / sizeof(tr_pending);
    tr_pending *pending = (tr_pending *)c->pending.data;
    if (n && pending[0].off < keep) {
        keep = pending[0].off; /* lines are in file order: the first docno comes first */
    }
    if (keep == 0) {
        return;
    }
    memmove(c->text.data, c->text.data + keep, c->text.size - keep);
    c->text.size -= keep;
    c->parsed -= keep;
    c->seen_to = c->seen_to > keep ? c->seen_to - keep : 0;
    for (size_t i = 0; i < n; i++) {
        pending[i].off -= keep;
    }
}

int tr_coder_feed(tr_coder *c, const char *data, size_t size) {
    if (c->status != TR_OK) {
        return c->status;
    }
    coder_compact(c);
    c->status = bytes_add(&c->text, data, size);
    if (c->status == TR_OK) {
        c->status = coder_read(c, 0);
    }
    return c->status;
}

/* [at, end) of file `fd` (end < 0: up to its end) read into the coder `chunk` bytes at a time:
   with pread at offsets when `positioned` (two coders then share the file), else with read
   from where the file is. The coder's status, or -1 with errno set when a read fails. */
static int coder_read_range(tr_coder *c, int fd, long long at, long long end, size_t chunk,
                            int positioned) {
    while (c->status == TR_OK && (end < 0 || at < end)) {
        coder_compact(c);
        size_t want = chunk;
        if (end >= 0 && (unsigned long long)(end - at) < want) {
            want = (size_t)(end - at);
        }
        if (bytes_reserve(&c->text, want) != TR_OK) {
            c->status = TR_NO_MEMORY;
            break;
        }
        char *into = c->text.data + c->text.size;
        long long got;
        do {
#if TR_PARTS
            got = positioned ? (long long)pread(fd, into, want, (off_t)at)
                             : (long long)read(fd, into, want);
#else
            (void)positioned;
            got = (long long)read(fd, into, (unsigned int)want);
#endif
        } while (got < 0 && errno == EINTR);
        if (got < 0) {
            return -1;
        }
        if (got == 0) { /* the end of the file */
            break;
        }
        at += got;
        c->text.size += (size_t)got;
        c->status = coder_read(c, 0);
    }
    return c->status;
}

/* The end of the coder's part of the file: its last line read, its last query coded. */
static int coder_close(tr_coder *c) {
    if (c->status == TR_OK) {
        c->status = coder_read(c, 1);
    }
    if (c->status == TR_OK) {
        c->status = code_group(c);
        c->current = -1;
    }
    return c->status;
}

#if TR_PARTS
/* Where the file's second part starts: the first line after `mid` whose query is not the one
   of the first whole line after `mid`, so that no query's block is cut in two. -1 when none is
   found in the next 256 KiB (one coder then reads the whole file). */
static long long part_start(int fd, long long mid) {
    enum { WINDOW = 1 << 18 };
    char *window = malloc(WINDOW);
    long long found = -1, got;
    if (window == NULL) {
        return -1;
    }
    do {
        got = (long long)pread(fd, window, WINDOW, (off_t)mid);
    } while (got < 0 && errno == EINTR);
    const char *end = window + (got > 0 ? got : 0);
    const char *p = got > 0 ? memchr(window, '\n', (size_t)got) : NULL;
    const char *qid = NULL;
    size_t qid_len = 0;
    while (p != NULL && ++p < end) {
        const char *field[6], *line_end;
        size_t field_len[6];
        double score;
        int blank;
        int status = read_line(p, end, field, field_len, &score, &blank, &line_end);
        if (line_end == end || status != TR_OK) {
            break; /* past the window, or a line the coders will decide on */
        }
        if (!blank && qid == NULL) {
            qid = field[0];
            qid_len = field_len[0];
        } else if (!blank && (field_len[0] != qid_len || memcmp(field[0], qid, qid_len) != 0)) {
            found = mid + (long long)(p - window);
            break;
        }
        p = line_end;
    }
    free(window);
    return found;
}

typedef struct {
    tr_coder *coder;
    int fd;
    long long at, end;
    size_t chunk;
    int status, error;
} tr_part;

static void *read_part(void *arg) {
    tr_part *part = arg;
    part->status = coder_read_range(part->coder, part->fd, part->at, part->end, part->chunk, 1);
    part->error = errno;
    if (part->status == TR_OK) {
        part->status = coder_close(part->coder);
    }
    return NULL;
}

/* The second part's queries and codes after the first's; TR_SPLIT when a query is in both. */
static int coder_merge(tr_coder *c, const tr_coder *next) {
    if (c->status != TR_OK || next->status != TR_OK) {
        return c->status != TR_OK ? c->status : (c->status = next->status);
    }
    for (uint32_t q = 0; q < next->queries.count; q++) {
        int is_new = 0;
        if (coder_query(c, next->queries.names[q], next->queries.lengths[q], &is_new) < 0) {
            return c->status = TR_NO_MEMORY;
        }
        if (!is_new) {
            return c->status = TR_SPLIT;
        }
    }
    if (bytes_add(&c->rows, next->rows.data, next->rows.size) != TR_OK ||
        bytes_add(&c->lengths, next->lengths.data, next->lengths.size) != TR_OK ||
        bytes_add(&c->codes, next->codes.data, next->codes.size) != TR_OK ||
        (!c->has_tag && next->has_tag && bytes_add(&c->tag, next->tag.data, next->tag.size))) {
        return c->status = TR_NO_MEMORY;
    }
    c->has_tag = c->has_tag || next->has_tag;
    return TR_OK;
}

/* The file in two parts, the first read by a new thread while this one reads the second. */
static int coder_read_parts(tr_coder *c, int fd, long long size, size_t chunk) {
    long long start = part_start(fd, size / 2);
    tr_coder *next = start < 0 ? NULL
                               : tr_coder_new(c->float32, c->max_retrieved, c->depth, c->ctx,
                                              c->row_of, c->code_of);
    tr_part first = {c, fd, 0, start, chunk, TR_OK, 0};
    pthread_t thread;
    if (next == NULL || pthread_create(&thread, NULL, read_part, &first) != 0) {
        tr_coder_free(next);
        return coder_read_range(c, fd, 0, -1, chunk, 1);
    }
    int status = coder_read_range(next, fd, start, -1, chunk, 1), error = errno;
    if (status == TR_OK) {
        status = coder_close(next);
    }
    pthread_join(thread, NULL);
    if (first.status < 0 || status < 0) {
        errno = first.status < 0 ? first.error : error;
        tr_coder_free(next);
        return -1;
    }
    status = coder_merge(c, next);
    tr_coder_free(next);
    return status;
}
#endif

int tr_coder_read(tr_coder *c, int fd, size_t chunk, int parts) {
    if (chunk == 0 || chunk > INT32_MAX) {
        errno = EINVAL;
        return -1;
    }
#if TR_PARTS
    struct stat file;
    if (parts > 1 && c->status == TR_OK && c->text.size == 0 && fstat(fd, &file) == 0 &&
        S_ISREG(file.st_mode) && lseek(fd, 0, SEEK_CUR) == 0 &&
        (unsigned long long)file.st_size >= 2 * (unsigned long long)chunk) {
        return coder_read_parts(c, fd, (long long)file.st_size, chunk);
    }
#else
    (void)parts;
#endif
    return coder_read_range(c, fd, 0, -1, chunk, 0);
}

static PyObject *int64_list(const tr_bytes *values) {
    size_t n = values->size / sizeof(int64_t);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        int64_t value;
        memcpy(&value, values->data + i * sizeof value, sizeof value);
        PyObject *number = PyLong_FromLongLong(value);
        if (number == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, number);
    }
    return list;
}

int tr_coder_split(const tr_coder *c) { return c->status == TR_SPLIT; }

PyObject *tr_coder_finish(tr_coder *c) {
    coder_close(c);
    if (c->status == TR_NO_MEMORY) {
        return PyErr_NoMemory();
    }
    if (c->status == TR_PUNT || c->status == TR_SPLIT) {
        return Py_NewRef(Py_None);
    }
    PyObject *qids = PyList_New(c->queries.count);
    PyObject *rows = int64_list(&c->rows), *lengths = int64_list(&c->lengths);
    PyObject *codes = PyBytes_FromStringAndSize(c->codes.data ? c->codes.data : "",
                                                (Py_ssize_t)c->codes.size);
    PyObject *tag = rm_ascii_text(c->tag.data ? c->tag.data : "", c->tag.size);
    PyObject *result = NULL;
    if (qids != NULL && rows != NULL && lengths != NULL && codes != NULL && tag != NULL) {
        uint32_t q = 0;
        for (; q < c->queries.count; q++) {
            PyObject *qid = rm_ascii_text(c->queries.names[q], c->queries.lengths[q]);
            if (qid == NULL) {
                break;
            }
            PyList_SET_ITEM(qids, q, qid);
        }
        if (q == c->queries.count) {
            result = PyTuple_Pack(5, tag, qids, rows, codes, lengths);
        }
    }
    Py_XDECREF(qids);
    Py_XDECREF(rows);
    Py_XDECREF(lengths);
    Py_XDECREF(codes);
    Py_XDECREF(tag);
    return result;
}
