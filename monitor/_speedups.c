/* monitor._speedups: the per-document work of rankmon's hot paths, in C; this file is the
 * module (its table, its init, the hash key), each stage binds its own C (bindings.h).
 *
 * Entry points, all optional accelerators of pure-Python code that stays the reference:
 *
 * - JudgmentIndex(query_ids, judgments).codes(rows, rankings, depth): the grade code of every
 *   ranked document (what Scorer otherwise does with one dict probe per document).
 *   JudgmentIndex.from_qrels(data) builds one straight from a TREC qrels file (qrels_scan.c).
 * - decode_events(index, values, ...): a poll's record values -> accepted events with their
 *   grade codes, scanned from the bytes (event_scan.c) without building a Python string per
 *   document. A record the scanner is not sure about is "punted": the caller decodes it with
 *   monitor.ingest.events, which decides every rejection and its reason.
 * - measure_codes(...): the measures of rankings given as grade codes (measure_kernel.c).
 * - parse_records(...): the records of a fetched Kafka record batch as rankmon's
 *   SourceRecords (record_batch.c), in place of kafka-python's per-record Python reader.
 *
 * Grade codes are one byte: 0 = not judged (or right padding), 1..255 = the caller's codes.
 */
#include "_native/bindings.h"

#include "kafka/record_batch.h"
#include "scoring/judgments.h"
#include "trec/run_order.h"

/* Key the hash tables with 16 bytes from os.urandom. */
static int seed_hashes(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL) {
        return -1;
    }
    PyObject *key = PyObject_CallMethod(os, "urandom", "n", (Py_ssize_t)16);
    Py_DECREF(os);
    if (key == NULL) {
        return -1;
    }
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != 16) {
        Py_DECREF(key);
        PyErr_SetString(PyExc_RuntimeError, "os.urandom(16) did not give 16 bytes");
        return -1;
    }
    rm_seed_hash((const unsigned char *)PyBytes_AS_STRING(key));
    Py_DECREF(key);
    return 0;
}

static PyObject *set_hash_seed(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) != 16) {
        PyErr_SetString(PyExc_ValueError, "the seed is 16 bytes");
        return NULL;
    }
    rm_seed_hash((const unsigned char *)PyBytes_AS_STRING(arg));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_hash_seed", (PyCFunction)set_hash_seed, METH_O, "See monitor/_speedups.pyi."},
    {"order_run", (PyCFunction)tr_order_run, METH_VARARGS, "See monitor/_speedups.pyi."},
    {"parse_records", (PyCFunction)(void (*)(void))rb_parse_records, METH_VARARGS | METH_KEYWORDS,
     "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "monitor._speedups",
    .m_doc = "C accelerators for rankmon's per-document work (see monitor/_speedups.pyi).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    if (seed_hashes() < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    if (rm_add_scoring(module) < 0 || rm_add_ingest(module) < 0 || rm_add_trec(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
