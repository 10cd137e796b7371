/* TREC qrels read in C straight into judgment tables: the fast path of
 * monitor/scoring/evalset.py's load_evaluation_set (as JudgmentIndex.from_qrels).
 *
 * Lines are `qid iter docno grade`; blank lines and lines whose first field starts with `#`
 * are skipped; lines end at the characters str.splitlines() ends them at within ASCII, and
 * fields are separated as str.split() separates them. Whatever this path does not decide
 * alone it leaves to the Python path (QS_PUNT): a byte outside ASCII, a line without exactly 4
 * fields, a grade that is not [+-]digits within a 32-bit int, a judgment twice, a file without
 * any, a file of 4 GiB or more. The Python path then gives the same judgments, or the error
 * naming the line.
 *
 * No Python object is made per judgment: the query ids, docnos and grades go into an
 * rm_judgments (judgments.h), queries in first-seen order and each query's judgments in file
 * order, each coded by its rank among the distinct grades (1 = the lowest) when there are at
 * most RM_MAX_CODES of them. Needs no GIL.
 */
#ifndef RANKMON_QRELS_SCAN_H
#define RANKMON_QRELS_SCAN_H

#include <stddef.h>

#include "judgments.h"

enum { QS_OK = 0, QS_PUNT = 1, QS_NO_MEMORY = 2 };

/* Fills `out` (zeroed by the caller; rm_judgments_free releases it, whatever the result). */
int qs_read_qrels(const char *data, size_t size, rm_judgments *out);

#endif
