/*
 * buffer_direct.c: tack.from_dlpack of a JAX array in host memory, read through its
 * buffer protocol (PEP 3118) instead of its __dlpack__.
 *
 * A JAX array's __dlpack_device__ and __dlpack__ are Python code, each dearer than
 * a whole NumPy import; np.from_dlpack(jax) pays only the second, since NumPy asks
 * no device first. JAX's type also exports a buffer, in C++, for an array in CPU
 * memory only: far cheaper, and it needs no device question first, since a GPU
 * array refuses (BufferError) and is then asked through __dlpack_device__ and
 * __dlpack__ as before (benchmarks/RESULTS.md, DLPack).
 *
 * What must stay true:
 *   - the result is what __dlpack__ would have given: the same address, shape and
 *     dtype, read-only (a JAX array is immutable, so Tack imports its tensors
 *     read-only too, dlpack_exchange_py.c's immutable_producer), the same device
 *     rules, copies and errors, because both paths end in
 *     tack_dlpack_import_described's validation;
 *   - the memory is JAX's final value and stays: JAX's buffer export waits for the
 *     computation that writes the array and holds the memory (an external
 *     reference, as its DLPack export does) until the view is released, which
 *     happens with the GIL when the last Tack array over it goes, from any thread
 *     (tackpy_release_buffer);
 *   - only types immutable by contract are read this way. For another producer a
 *     buffer and a DLPack tensor may disagree (a legacy tensor imports writable, a
 *     buffer of the same memory may be read-only), so their __dlpack__ stays the
 *     rule;
 *   - only C order (PyBUF_ND: the exporter refuses another layout) and only a
 *     format that names one dtype exactly; anything else goes through __dlpack__.
 */
#include "tackpy.h"
#include <string.h>

/* The DLPack dtype a buffer's struct format names, from its one type character and
 * the exporter's itemsize: 1, or 0 for a format read through __dlpack__ instead.
 * Byte order: native ('@', '=', or none) or the little-endian '<' on a
 * little-endian machine. */
static int
buffer_dtype(const Py_buffer *view, DLDataType *out)
{
    const char *f = view->format;
    if (!f) {
        return 0;
    }
    const bool little = PY_LITTLE_ENDIAN;
    if (*f == '@' || *f == '=' || (*f == '<' && little) || (*f == '>' && !little)) {
        f++;
    }
    Py_ssize_t size = view->itemsize;
    uint8_t code;
    if (strcmp(f, "?") == 0 && size == 1) {
        code = kDLBool;
    }
    else if (f[0] != '\0' && f[1] == '\0' && strchr("bhilq", f[0]) && size <= 8) {
        code = kDLInt;
    }
    else if (f[0] != '\0' && f[1] == '\0' && strchr("BHILQ", f[0]) && size <= 8) {
        code = kDLUInt;
    }
    else if ((strcmp(f, "e") == 0 && size == 2) || (strcmp(f, "f") == 0 && size == 4) ||
             (strcmp(f, "d") == 0 && size == 8)) {
        code = kDLFloat;
    }
    else if ((strcmp(f, "Zf") == 0 && size == 8) ||
             (strcmp(f, "Zd") == 0 && size == 16)) {
        code = kDLComplex;
    }
    else {
        return 0;
    }
    if (size != 1 && size != 2 && size != 4 && size != 8 && size != 16) {
        return 0;
    }
    out->code = code;
    out->bits = (uint8_t)(8 * size);
    out->lanes = 1;
    return 1;
}

int
tackpy_buffer_direct_import(tackpy_state *st, PyObject *x,
                            const tack_dlpack_import_options *opts, PyObject **result)
{
    if (!PyObject_CheckBuffer(x)) {
        return 0;
    }
    tackpy_buffer_hold *hold = PyMem_RawMalloc(sizeof *hold);
    if (!hold) {
        return 0; /* __dlpack__ still works, and reports its own failures */
    }
    if (PyObject_GetBuffer(x, &hold->view, PyBUF_ND | PyBUF_FORMAT) < 0) {
        PyMem_RawFree(hold);
        /* A GPU, sharded or deleted array, a layout other than C order, a dtype
         * with no struct format: JAX refuses those with BufferError, and
         * __dlpack__ answers for them (and raises what it raises). Anything else
         * (an interrupt while JAX waited for the array, no memory) is the
         * caller's. */
        if (!PyErr_ExceptionMatches(PyExc_BufferError)) {
            *result = NULL;
            return 1;
        }
        PyErr_Clear();
        return 0;
    }
    const Py_buffer *v = &hold->view;
    DLTensor t;
    memset(&t, 0, sizeof t);
    int64_t shape[TACK_MAX_NDIM];
    if (v->ndim < 0 || v->ndim > TACK_MAX_NDIM || (v->ndim > 0 && !v->shape) ||
        v->strides || !buffer_dtype(v, &t.dtype)) {
        PyBuffer_Release(&hold->view);
        PyMem_RawFree(hold);
        return 0;
    }
    for (int k = 0; k < v->ndim; k++) {
        shape[k] = v->shape[k];
    }
    t.data = v->buf;
    t.device.device_type = kDLCPU;
    t.device.device_id = 0;
    t.ndim = v->ndim;
    t.shape = shape;
    t.strides = NULL; /* C order: PyBUF_ND asked for it and gave no strides */
    t.byte_offset = 0;
    /* The runtime releases the hold exactly once, even on failure. */
    tack_array *arr;
    tack_status status = tack_dlpack_import_described(&t, false, tackpy_release_buffer,
                                                      hold, opts, &arr);
    st->buffer_direct_imports++;
    *result = status == TACK_OK ? tackpy_array_wrap(st, arr) : tackpy_raise(st, status);
    return 1;
}
