/* See qrels_scan.h: TREC qrels read in C into judgment tables. */
#include "ascii_text.h" /* first: it includes Python.h, which must precede the C headers */
#include "qrels_scan.h"

#include "id_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One judgment line: its docno (offset and length in the file), query and grade. */
typedef struct {
    uint32_t off;
    uint32_t len;
    uint32_t query;
    int32_t grade;
} qs_line;

/* Byte classes (ascii_text.h): lines end where str.splitlines() ends them within ASCII (\n
   \r \v \f and the separators \x1c \x1d \x1e), fields where str.split() also splits once
   lines are cut (space, tab, \x1f); outside ASCII the file is left to Python. */
static const unsigned char qs_class[256] = {
    ['\n'] = RM_LINE_BREAK, ['\r'] = RM_LINE_BREAK, ['\v'] = RM_LINE_BREAK,
    ['\f'] = RM_LINE_BREAK, [0x1c] = RM_LINE_BREAK, [0x1d] = RM_LINE_BREAK,
    [0x1e] = RM_LINE_BREAK, [' '] = RM_FIELD_BREAK, ['\t'] = RM_FIELD_BREAK,
    [0x1f] = RM_FIELD_BREAK,
    RM_GIVE_UP_FROM_0X80,
};

static int read_grade(const char *text, size_t len, int32_t *out) {
    size_t i = 0;
    int negative = 0;
    if (len && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        i = 1;
    }
    if (i == len || len - i > 12) {
        return QS_PUNT;
    }
    int64_t value = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') {
            return QS_PUNT;
        }
        value = value * 10 + (text[i] - '0');
    }
    value = negative ? -value : value;
    if (value < INT32_MIN || value > INT32_MAX) {
        return QS_PUNT;
    }
    *out = (int32_t)value;
    return QS_OK;
}

typedef struct {
    qs_line *lines;
    size_t count, capacity;
    size_t doc_bytes; /* the docnos' total length */
} qs_lines;

static int add_line(qs_lines *l, qs_line line) {
    if (l->count == l->capacity) {
        size_t capacity = l->capacity ? l->capacity * 2 : 4096;
        qs_line *grown = realloc(l->lines, capacity * sizeof *grown);
        if (grown == NULL) {
            return QS_NO_MEMORY;
        }
        l->lines = grown;
        l->capacity = capacity;
    }
    l->lines[l->count++] = line;
    l->doc_bytes += line.len;
    return QS_OK;
}

/* Every judgment line of the file, its query numbered in `queries`. */
static int scan_lines(const char *data, size_t size, rm_id_table *queries, qs_lines *out) {
    const char *p = data, *end = data + size;
    int64_t last = -1;
    while (p < end) {
        const char *field[4], *line_end;
        size_t length[4];
        int fields = rm_split_line(p, end, qs_class, field, length, 4, &line_end);
        p = line_end + 1; /* past the line break */
        if (fields < 0) {
            return QS_PUNT;
        }
        if (fields == 0 || field[0][0] == '#') {
            continue;
        }
        qs_line line;
        if (fields != 4 || read_grade(field[3], length[3], &line.grade) != QS_OK) {
            return QS_PUNT;
        }
        /* Most files list a query's judgments together: the last line's query first. */
        int64_t query = last;
        if (last < 0 || queries->lengths[last] != length[0] ||
            memcmp(queries->names[last], field[0], length[0]) != 0) {
            query = last = rm_id_index(queries, field[0], (uint32_t)length[0], NULL);
        }
        if (query < 0) {
            return QS_NO_MEMORY;
        }
        line.off = (uint32_t)(field[2] - data);
        line.len = (uint32_t)length[2];
        line.query = (uint32_t)query;
        if (add_line(out, line) != QS_OK) {
            return QS_NO_MEMORY;
        }
    }
    return out->count ? QS_OK : QS_PUNT;
}

/* An rm_store_* status as this reader's. */
static int qs_status(int store_status) {
    return store_status == RM_STORE_OK          ? QS_OK
           : store_status == RM_STORE_NO_MEMORY ? QS_NO_MEMORY
                                                : QS_PUNT; /* a duplicate, or too large */
}

/* The query ids' table: id -> row. */
static int build_query_ids(const rm_id_table *queries, rm_judgments *out) {
    size_t total = 0;
    for (uint32_t q = 0; q < queries->count; q++) {
        total += queries->lengths[q];
    }
    if (total >= UINT32_MAX) {
        return QS_PUNT;
    }
    out->query_table.count = queries->count;
    int status = qs_status(rm_store_layout(&out->query_ids, &out->query_table, 1, queries->count));
    out->query_ids.pool = status == QS_OK ? malloc(total ? total : 1) : NULL;
    if (status == QS_OK && out->query_ids.pool == NULL) {
        status = QS_NO_MEMORY;
    }
    size_t pool = 0;
    for (uint32_t q = 0; status == QS_OK && q < queries->count; q++) {
        status = qs_status(rm_store_key(&out->query_ids, &out->query_table, q, queries->names[q],
                                        queries->lengths[q], q, &pool));
    }
    return status;
}

/* Each query's judgments, in file order: their table, grades and codes. */
static int build_judgments(const char *data, const qs_lines *lines, uint32_t n_queries,
                           rm_judgments *out) {
    uint32_t *sizes = calloc((size_t)n_queries + 1, sizeof *sizes);
    size_t *next = malloc(((size_t)n_queries + 1) * sizeof *next);
    uint32_t *order = malloc(lines->count * sizeof *order);
    out->tables = calloc(n_queries ? n_queries : 1, sizeof *out->tables);
    out->grades = malloc(lines->count * sizeof *out->grades);
    int status = QS_NO_MEMORY;
    if (sizes == NULL || next == NULL || order == NULL || out->tables == NULL ||
        out->grades == NULL) {
        goto done;
    }
    for (size_t i = 0; i < lines->count; i++) {
        sizes[lines->lines[i].query]++;
    }
    /* A counting sort by query, stable: each query's lines keep their file order. */
    size_t start = 0;
    for (uint32_t q = 0; q < n_queries; q++) {
        next[q] = start;
        start += sizes[q];
    }
    for (size_t i = 0; i < lines->count; i++) {
        order[next[lines->lines[i].query]++] = (uint32_t)i;
    }
    for (uint32_t q = 0; q < n_queries; q++) {
        out->tables[q].count = sizes[q];
    }
    status = qs_status(rm_store_layout(&out->judged, out->tables, n_queries, lines->count));
    out->judged.pool = status == QS_OK ? malloc(lines->doc_bytes ? lines->doc_bytes : 1) : NULL;
    if (status == QS_OK && out->judged.pool == NULL) {
        status = QS_NO_MEMORY;
    }
    for (size_t e = 0; status == QS_OK && e < lines->count; e++) {
        out->grades[e] = lines->lines[order[e]].grade;
    }
    /* The codes of the grades -128..127 in a table, the others by search. */
    uint8_t small_codes[256] = {0};
    if (status == QS_OK) {
        rm_find_code_grades(out, lines->count);
        for (int c = 0; c < out->n_codes; c++) {
            if (out->code_grades[c] >= -128 && out->code_grades[c] <= 127) {
                small_codes[out->code_grades[c] + 128] = (uint8_t)(c + 1);
            }
        }
    }
    size_t pool = 0, e = 0;
    for (uint32_t q = 0; status == QS_OK && q < n_queries; q++) {
        for (uint32_t k = 0; status == QS_OK && k < sizes[q]; k++, e++) {
            const qs_line *line = &lines->lines[order[e]];
            uint32_t code = 0;
            if (line->grade >= -128 && line->grade <= 127) {
                code = small_codes[line->grade + 128];
            } else if (out->n_codes > 0) {
                code = 1 + (uint32_t)rm_lower_bound(out->code_grades, out->n_codes, line->grade);
            }
            status = qs_status(rm_store_key(&out->judged, &out->tables[q], (uint32_t)e,
                                            data + line->off, line->len, code, &pool));
        }
    }
done:
    free(sizes);
    free(next);
    free(order);
    return status;
}

int qs_read_qrels(const char *data, size_t size, rm_judgments *out) {
    if (size >= UINT32_MAX) {
        return QS_PUNT; /* docno offsets are 32-bit */
    }
    rm_id_table queries = {0};
    qs_lines lines = {0};
    int status = scan_lines(data, size, &queries, &lines);
    if (status == QS_OK && lines.doc_bytes >= UINT32_MAX) {
        status = QS_PUNT;
    }
    if (status == QS_OK) {
        out->queries = queries.count;
        status = build_judgments(data, &lines, queries.count, out);
    }
    if (status == QS_OK) {
        status = build_query_ids(&queries, out);
    }
    free(lines.lines);
    rm_id_table_free(&queries);
    return status;
}
