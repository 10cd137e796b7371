/* A TREC run file parsed and ordered in C: the fast path of monitor/trec/runfile.py.
 *
 * tr_order_run(data: bytes, float32: bool, max_retrieved: int) -> (tag, rankings) | None
 *
 * `rankings` is {qid: (docno, ...)} in first-appearance order of the queries, each ranking
 * ordered as trec_eval orders it (score descending, ties by docno descending in byte order;
 * with float32 the scores are rounded to C floats first) and cut to max_retrieved (< 0: no
 * cut). The rules are runfile.py's; whatever this path does not decide alone it leaves to
 * the Python path by returning None: a byte outside ASCII, a line of 1 to 5 fields, a score
 * that is not a plain decimal number ([0-9+-.eE] only, read whole by strtod), a document twice
 * in one query. The Python path then gives the same answer, or the error naming the line.
 */
#ifndef RANKMON_RUN_ORDER_H
#define RANKMON_RUN_ORDER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *tr_order_run(PyObject *self, PyObject *args);

#endif
