/* The trec stage's CPython bindings: a run coded against a JudgmentIndex, at once (code_run)
   or fed in chunks (run_coder, a RunCoder), with run_order.c. order_run binds
   itself in run_order.c. Their Python signatures are monitor/_speedups.pyi. */
#include "../scoring/index_binding.h"

#include "run_order.h"

static int64_t run_row_of(const void *ctx, const char *qid, size_t len) {
    return rm_index_row((const JudgmentIndex *)ctx, qid, len);
}

static uint8_t run_code_of(const void *ctx, int64_t row, const char *doc, size_t len,
                           uint64_t hash) {
    return rm_index_code((const JudgmentIndex *)ctx, (Py_ssize_t)row, doc, len, hash);
}

/* code_run(index, data, float32, max_retrieved, depth): a TREC run parsed, ordered and coded
   against the index (see monitor/trec/run_order.h). */
static PyObject *code_run(PyObject *module, PyObject *args) {
    (void)module;
    JudgmentIndex *self;
    Py_buffer data;
    int float32;
    long long max_retrieved, depth;
    if (!PyArg_ParseTuple(args, "O!y*pLL:code_run", &rm_JudgmentIndexType, &self, &data,
                          &float32, &max_retrieved, &depth)) {
        return NULL;
    }
    PyObject *result = tr_code_run(data.buf, (size_t)data.len, float32, max_retrieved, depth,
                                   self, run_row_of, run_code_of);
    PyBuffer_Release(&data);
    return result;
}

/* ---------------------------------------------------------------- RunCoder */

typedef struct {
    PyObject_HEAD
    tr_coder *coder;
    PyObject *index; /* the JudgmentIndex the coder looks grades up in, kept alive */
    int split;       /* after finish(): tr_coder_split */
    int busy;        /* feed() or read() runs without the GIL: no other call may enter */
} RunCoder;

/* The coder, or NULL with an exception when it is finished or another thread is in
   feed()/read() (they release the GIL: a finish() then would free what they read). Set and
   tested under the GIL, so two threads cannot both pass. */
static tr_coder *coder_usable(RunCoder *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the run coder is in use by another thread");
        return NULL;
    }
    if (self->coder == NULL) {
        PyErr_SetString(PyExc_ValueError, "the run coder is finished");
        return NULL;
    }
    return self->coder;
}

static void coder_dealloc(RunCoder *self) {
    tr_coder_free(self->coder);
    Py_XDECREF(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *coder_feed(RunCoder *self, PyObject *arg) {
    Py_buffer chunk;
    tr_coder *coder = coder_usable(self);
    if (coder == NULL) {
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &chunk, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    int status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    status = tr_coder_feed(coder, chunk.buf, (size_t)chunk.len);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    PyBuffer_Release(&chunk);
    return PyBool_FromLong(status == 0);
}

static PyObject *coder_read(RunCoder *self, PyObject *args) {
    int fd, parts = 1;
    Py_ssize_t chunk;
    if (!PyArg_ParseTuple(args, "in|i:read", &fd, &chunk, &parts)) {
        return NULL;
    }
    tr_coder *coder = coder_usable(self);
    if (coder == NULL) {
        return NULL;
    }
    if (chunk < 1) {
        PyErr_Format(PyExc_ValueError, "chunk must be >= 1, got %zd", chunk);
        return NULL;
    }
    int status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    status = tr_coder_read(coder, fd, (size_t)chunk, parts);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    if (status < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyBool_FromLong(status == 0);
}

static PyObject *coder_finish(RunCoder *self, PyObject *unused) {
    (void)unused;
    if (coder_usable(self) == NULL) {
        return NULL;
    }
    PyObject *result = tr_coder_finish(self->coder);
    self->split = tr_coder_split(self->coder);
    tr_coder_free(self->coder);
    self->coder = NULL;
    return result;
}

static PyObject *coder_split(RunCoder *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->split);
}

static PyGetSetDef coder_getset[] = {
    {"split", (getter)coder_split, NULL, "See monitor/_speedups.pyi.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef coder_methods[] = {
    {"feed", (PyCFunction)coder_feed, METH_O, "See monitor/_speedups.pyi."},
    {"read", (PyCFunction)coder_read, METH_VARARGS, "See monitor/_speedups.pyi."},
    {"finish", (PyCFunction)coder_finish, METH_NOARGS, "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RunCoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "monitor._speedups.RunCoder",
    .tp_basicsize = sizeof(RunCoder),
    .tp_dealloc = (destructor)coder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "See monitor/_speedups.pyi.",
    .tp_methods = coder_methods,
    .tp_getset = coder_getset,
};

static PyObject *run_coder(PyObject *module, PyObject *args) {
    (void)module;
    JudgmentIndex *self;
    int float32;
    long long max_retrieved, depth;
    if (!PyArg_ParseTuple(args, "O!pLL:run_coder", &rm_JudgmentIndexType, &self, &float32,
                          &max_retrieved, &depth)) {
        return NULL;
    }
    RunCoder *coder = PyObject_New(RunCoder, &RunCoderType);
    if (coder == NULL) {
        return NULL;
    }
    coder->index = Py_NewRef((PyObject *)self);
    coder->split = 0;
    coder->busy = 0;
    coder->coder = tr_coder_new(float32, max_retrieved, depth, self, run_row_of, run_code_of);
    if (coder->coder == NULL) {
        Py_DECREF(coder);
        return PyErr_NoMemory();
    }
    return (PyObject *)coder;
}

static PyMethodDef trec_functions[] = {
    {"code_run", (PyCFunction)code_run, METH_VARARGS, "See monitor/_speedups.pyi."},
    {"run_coder", (PyCFunction)run_coder, METH_VARARGS, "See monitor/_speedups.pyi."},
    {NULL, NULL, 0, NULL},
};

int rm_add_trec(PyObject *module) {
    if (PyType_Ready(&RunCoderType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, trec_functions);
}
