/* TREC qrels read in C: the fast path of monitor/scoring/evalset.py's load_evaluation_set.
 *
 * qs_parse_qrels(data: bytes) -> {qid: {docno: grade}} | None
 *
 * Lines are `qid iter docno grade`; blank lines and lines whose first field starts with `#`
 * are skipped; lines end at the characters str.splitlines() ends them at within ASCII, and
 * fields are separated as str.split() separates them. Whatever this path does not decide
 * alone it leaves to the Python path by returning None: a byte outside ASCII, a line without
 * exactly 4 fields, a grade that is not [+-]digits within a 32-bit int, a judgment twice,
 * a file without any. The Python path then gives the same judgments, or the error naming
 * the line.
 */
#ifndef RANKMON_QRELS_SCAN_H
#define RANKMON_QRELS_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *qs_parse_qrels(PyObject *self, PyObject *args);

#endif
