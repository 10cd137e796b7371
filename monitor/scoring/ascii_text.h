/* A Python str from bytes the caller has checked are ASCII (all below 0x80), made without
 * decoding: the C readers of run and qrels files share it. */
#ifndef RANKMON_ASCII_TEXT_H
#define RANKMON_ASCII_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

static inline PyObject *rm_ascii_text(const char *text, size_t len) {
    PyObject *string = PyUnicode_New((Py_ssize_t)len, 127);
    if (string != NULL) {
        memcpy(PyUnicode_DATA(string), text, len);
    }
    return string;
}

#endif
