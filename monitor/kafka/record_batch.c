/* Kafka record batch (v2) records -> SourceRecord tuples; see record_batch.h. */
#include "record_batch.h"

#include <stdint.h>

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    Py_ssize_t pos;
    const char *error; /* the first thing found corrupt, or NULL */
} rb_reader;

/* A zigzag varint of at most 64 bits (a longer one is corrupt, as in kafka-python). */
static int64_t read_varint(rb_reader *r) {
    uint64_t raw = 0;
    int shift = 0;
    for (;;) {
        if (r->pos >= r->size) {
            r->error = "record runs past the end of its batch";
            return 0;
        }
        unsigned char b = r->data[r->pos++];
        if (shift == 63 && (b & 0x7e)) {
            r->error = "varint out of int64 range";
            return 0;
        }
        raw |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            break;
        }
        shift += 7;
        if (shift >= 64) {
            r->error = "varint out of int64 range";
            return 0;
        }
    }
    return (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
}

/* a + b as a Python int, exactly: a delta read from the wire may push an offset or a
   timestamp past int64 (kafka-python's Python ints then just grow; C must not overflow). */
static PyObject *exact_sum(long long a, int64_t b) {
    long long sum;
    if (!__builtin_add_overflow(a, (long long)b, &sum)) {
        return PyLong_FromLongLong(sum);
    }
    PyObject *x = PyLong_FromLongLong(a);
    PyObject *y = PyLong_FromLongLong((long long)b);
    PyObject *exact = (x && y) ? PyNumber_Add(x, y) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return exact;
}

/* `length` bytes from the reader as a new bytes object; None-for-negative is the caller's. */
static PyObject *read_bytes(rb_reader *r, int64_t length) {
    if (length > (int64_t)(r->size - r->pos)) {
        r->error = "record runs past the end of its batch";
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)r->data + r->pos, (Py_ssize_t)length);
    r->pos += (Py_ssize_t)length;
    return bytes;
}

/* Skips the headers; a header key must be UTF-8 (kafka-python decodes it). 0 ok, -1 with a
   Python exception set (out of memory), 1 corrupt (r->error set). */
static int skip_headers(rb_reader *r) {
    int64_t count = read_varint(r);
    if (r->error) {
        return 1;
    }
    if (count < 0) {
        r->error = "negative header count";
        return 1;
    }
    for (int64_t h = 0; h < count; h++) {
        int64_t key_length = read_varint(r);
        if (r->error) {
            return 1;
        }
        if (key_length < 0 || key_length > (int64_t)(r->size - r->pos)) {
            r->error = key_length < 0 ? "negative header key length"
                                      : "record runs past the end of its batch";
            return 1;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)r->data + r->pos,
                                             (Py_ssize_t)key_length, "strict");
        if (key == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                return -1;
            }
            PyErr_Clear();
            r->error = "header key is not UTF-8";
            return 1;
        }
        Py_DECREF(key);
        r->pos += (Py_ssize_t)key_length;
        int64_t value_length = read_varint(r);
        if (r->error) {
            return 1;
        }
        if (value_length > (int64_t)(r->size - r->pos)) {
            r->error = "record runs past the end of its batch";
            return 1;
        }
        if (value_length > 0) {
            r->pos += (Py_ssize_t)value_length;
        }
    }
    return 0;
}

/* One record as a new `record_type` instance; NULL with r->error set (corrupt) or with a
   Python exception set. */
static PyObject *read_record(rb_reader *r, long long base_offset, long long first_timestamp,
                             long long max_timestamp, int log_append_time, PyObject *topic,
                             PyObject *partition, PyTypeObject *record_type) {
    int64_t length = read_varint(r);
    if (r->error) {
        return NULL;
    }
    Py_ssize_t start = r->pos;
    (void)read_varint(r); /* attributes: unused in v2 records */
    int64_t timestamp_delta = read_varint(r);
    int64_t offset_delta = read_varint(r);
    int64_t key_length = read_varint(r);
    if (r->error) {
        return NULL;
    }
    PyObject *key = NULL, *value = NULL, *offset = NULL, *timestamp = NULL;
    if (key_length >= 0) {
        if ((key = read_bytes(r, key_length)) == NULL) {
            goto fail;
        }
    } else {
        key = Py_NewRef(Py_None);
    }
    int64_t value_length = read_varint(r);
    if (r->error) {
        goto fail;
    }
    /* A null value (a tombstone) reads as an empty one: rankmon rejects both alike. */
    if ((value = read_bytes(r, value_length >= 0 ? value_length : 0)) == NULL) {
        goto fail;
    }
    int headers = skip_headers(r);
    if (headers != 0) {
        goto fail;
    }
    if (r->pos - start != length) {
        r->error = "record fields do not fill its length";
        goto fail;
    }
    offset = exact_sum(base_offset, offset_delta);
    timestamp = log_append_time ? PyLong_FromLongLong(max_timestamp)
                                : exact_sum(first_timestamp, timestamp_delta);
    if (offset == NULL || timestamp == NULL) {
        goto fail;
    }
    /* A tuple subclass is allocated with room for its items and filled like a tuple, which
       is what tuple.__new__ does for a named tuple, without the intermediate tuple. */
    PyObject *record = record_type->tp_alloc(record_type, 6);
    if (record == NULL) {
        goto fail;
    }
    PyTuple_SET_ITEM(record, 0, Py_NewRef(topic));
    PyTuple_SET_ITEM(record, 1, Py_NewRef(partition));
    PyTuple_SET_ITEM(record, 2, offset);
    PyTuple_SET_ITEM(record, 3, timestamp);
    PyTuple_SET_ITEM(record, 4, key);
    PyTuple_SET_ITEM(record, 5, value);
    return record;
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(offset);
    Py_XDECREF(timestamp);
    return NULL;
}

PyObject *rb_parse_records(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *keywords[] = {"buffer",        "pos",           "count",
                               "base_offset",   "first_timestamp", "max_timestamp",
                               "log_append_time", "topic",       "partition",
                               "record_type",   NULL};
    Py_buffer buffer;
    Py_ssize_t pos, count;
    long long base_offset, first_timestamp, max_timestamp;
    int log_append_time;
    PyObject *topic, *partition;
    PyTypeObject *record_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*nnLLLpUO!O!:parse_records", keywords,
                                     &buffer, &pos, &count,
                          &base_offset, &first_timestamp, &max_timestamp, &log_append_time,
                          &topic, &PyLong_Type, &partition, &PyType_Type, &record_type)) {
        return NULL;
    }
    PyObject *records = NULL, *error = NULL, *result = NULL;
    if (!PyType_IsSubtype(record_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass");
        goto done;
    }
    if (pos < 0 || pos > buffer.len) {
        PyErr_SetString(PyExc_ValueError, "pos outside the buffer");
        goto done;
    }
    rb_reader reader = {buffer.buf, buffer.len, pos, NULL};
    records = PyList_New(0);
    if (records == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = read_record(&reader, base_offset, first_timestamp, max_timestamp,
                                       log_append_time, topic, partition, record_type);
        if (record == NULL) {
            if (reader.error == NULL) {
                goto done; /* a Python exception (out of memory) */
            }
            break;
        }
        int appended = PyList_Append(records, record);
        Py_DECREF(record);
        if (appended < 0) {
            goto done;
        }
    }
    if (reader.error == NULL && reader.pos != reader.size) {
        reader.error = "bytes left over after the batch's last record";
    }
    if (reader.error != NULL) {
        error = PyUnicode_FromString(reader.error);
        if (error == NULL) {
            goto done;
        }
    } else {
        error = Py_NewRef(Py_None);
    }
    result = PyTuple_Pack(2, records, error);
done:
    Py_XDECREF(records);
    Py_XDECREF(error);
    PyBuffer_Release(&buffer);
    return result;
}
