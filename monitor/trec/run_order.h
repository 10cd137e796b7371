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

#include <stdint.h>

PyObject *tr_order_run(PyObject *self, PyObject *args);

/* The evaluator's coded path: the same parse and order, then each query's documents as grade
 * codes, with no Python string per document. `row_of` maps a query id to its evaluation-set
 * row (-1: not in it), `code_of` a row's document (and its rm_hash, judgments.h) to its
 * grade code (0: not judged).
 *
 * Returns (tag, qids, rows, codes, lengths) | None (the same punts as tr_order_run) | NULL
 * with an exception: every query in first-appearance order, its row, its ranking's length
 * after the max_retrieved cut; `codes` holds the codes of the first `depth` (< 0: all)
 * documents of each query with a row >= 0, concatenated in that order. */
typedef int64_t (*tr_row_fn)(const void *ctx, const char *qid, size_t len);
typedef uint8_t (*tr_code_fn)(const void *ctx, int64_t row, const char *doc, size_t len,
                              uint64_t hash); /* hash: rm_hash(doc, len) */
PyObject *tr_code_run(const char *data, size_t size, int float32, long long max_retrieved,
                      long long depth, const void *ctx, tr_row_fn row_of, tr_code_fn code_of);

/* The same, streaming: a file fed in chunks, each query coded as soon as its lines end, so
 * memory holds one query's lines at a time instead of the whole file. It only takes runs
 * whose queries each sit in one block of lines (what every ranker writes); a query seen
 * again after another punts, and the caller reads the whole file with tr_code_run.
 *
 * tr_coder_feed returns TR_OK (0), or nonzero once punted or out of memory (feeding more is
 * a no-op); tr_coder_read reads the rest of file descriptor `fd` into the coder's own buffer,
 * `chunk` bytes a read, and returns the same, or -1 with errno set when a read fails. With
 * `parts` 2, a regular file read from its start and at least 2 chunks long is read in two
 * parts at once, the first by a second thread and a second coder, split where a query's
 * block of lines begins: the same result, a query in both parts being a split;
 * tr_coder_finish returns tr_code_run's tuple, None on a punt, or NULL with an exception;
 * tr_coder_split says whether the punt was a query in two blocks (then tr_code_run decides
 * the file; any other punt is the Python path's). Feeding and reading need no GIL. */
typedef struct tr_coder tr_coder;
tr_coder *tr_coder_new(int float32, long long max_retrieved, long long depth, const void *ctx,
                       tr_row_fn row_of, tr_code_fn code_of);
int tr_coder_feed(tr_coder *coder, const char *data, size_t size);
int tr_coder_read(tr_coder *coder, int fd, size_t chunk, int parts);
PyObject *tr_coder_finish(tr_coder *coder);
int tr_coder_split(const tr_coder *coder);
void tr_coder_free(tr_coder *coder);

#endif
