/* See qrels_scan.h: TREC qrels read in C into {qid: {docno: grade}}. */
#include "qrels_scan.h"

#include "ascii_text.h"

#include <stdint.h>
#include <string.h>

enum { QS_OK = 0, QS_PUNT = 1, QS_ERROR = 2 };

static int line_break(unsigned char c) {
    /* str.splitlines() within ASCII: \n \r \v \f and the separators \x1c \x1d \x1e. */
    return c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e);
}

static int field_break(unsigned char c) {
    /* What str.split() also splits on, once lines are cut: space, tab, \x1f. */
    return c == ' ' || c == '\t' || c == 0x1f;
}

static int read_grade(const char *text, size_t len, long *out) {
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
    *out = (long)value;
    return QS_OK;
}

/* One line's judgment into `judgments`; `last_*` caches the previous line's query. */
static int add_line(PyObject *judgments, const char *field[4], const size_t length[4],
                    PyObject **last_docs, const char **last_qid, size_t *last_len) {
    long grade;
    if (read_grade(field[3], length[3], &grade) != QS_OK) {
        return QS_PUNT;
    }
    PyObject *docs = *last_docs;
    if (docs == NULL || *last_len != length[0] || memcmp(*last_qid, field[0], length[0]) != 0) {
        PyObject *qid = rm_ascii_text(field[0], length[0]);
        if (qid == NULL) {
            return QS_ERROR;
        }
        docs = PyDict_GetItemWithError(judgments, qid);
        if (docs == NULL && !PyErr_Occurred()) {
            docs = PyDict_New();
            if (docs != NULL && PyDict_SetItem(judgments, qid, docs) < 0) {
                Py_CLEAR(docs);
            }
            Py_XDECREF(docs); /* the dict holds it */
        }
        Py_DECREF(qid);
        if (docs == NULL) {
            return QS_ERROR;
        }
        *last_docs = docs;
        *last_qid = field[0];
        *last_len = length[0];
    }
    PyObject *doc = rm_ascii_text(field[2], length[2]);
    PyObject *value = doc ? PyLong_FromLong(grade) : NULL;
    int status = QS_ERROR;
    if (value != NULL) {
        int known = PyDict_Contains(docs, doc);
        if (known == 1) {
            status = QS_PUNT;
        } else if (known == 0 && PyDict_SetItem(docs, doc, value) == 0) {
            status = QS_OK;
        }
    }
    Py_XDECREF(doc);
    Py_XDECREF(value);
    return status;
}

PyObject *qs_parse_qrels(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) {
        return NULL;
    }
    PyObject *judgments = PyDict_New();
    PyObject *last_docs = NULL;
    const char *last_qid = NULL;
    size_t last_len = 0;
    int status = judgments ? QS_OK : QS_ERROR;
    const char *p = data.buf, *end = p + data.len;
    while (status == QS_OK && p < end) {
        const char *field[4];
        size_t length[4];
        int fields = 0;
        while (p < end && !line_break((unsigned char)*p)) {
            while (p < end && field_break((unsigned char)*p)) {
                p++;
            }
            if (p == end || line_break((unsigned char)*p)) {
                break;
            }
            const char *start = p;
            while (p < end && !line_break((unsigned char)*p) && !field_break((unsigned char)*p)) {
                if ((unsigned char)*p >= 0x80) {
                    status = QS_PUNT;
                }
                p++;
            }
            if (fields < 4) {
                field[fields] = start;
                length[fields] = (size_t)(p - start);
            }
            fields++;
        }
        p++; /* past the line break */
        if (status != QS_OK || fields == 0 || field[0][0] == '#') {
            continue;
        }
        status = fields == 4 ? add_line(judgments, field, length, &last_docs, &last_qid,
                                        &last_len)
                             : QS_PUNT;
    }
    PyBuffer_Release(&data);
    if (status == QS_OK && PyDict_GET_SIZE(judgments) == 0) {
        status = QS_PUNT;
    }
    if (status == QS_OK) {
        return judgments;
    }
    Py_XDECREF(judgments);
    if (status == QS_PUNT) {
        Py_RETURN_NONE;
    }
    return NULL;
}
