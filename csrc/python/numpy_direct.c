/*
 * numpy_direct.c: tack.from_dlpack of a NumPy ndarray, read through the array's own
 * fields instead of its __dlpack__.
 *
 * NumPy's __dlpack__(max_version=...) builds a managed tensor and a capsule that the
 * import takes apart at once: a third of an import's work. For an array of exactly
 * type numpy.ndarray the same tensor is read here from the fields NumPy's C API
 * makes public (data, nd, dimensions, descr, flags), and the array itself is held
 * instead of a capsule: one reference, dropped with the GIL when the last Tack array
 * over the memory goes (tackpy_release_object), from any thread.
 *
 * What must stay true:
 *   - the result is what __dlpack__ would have given: the same address, shape and
 *     dtype, read-only exactly when the NumPy array is not writeable (NumPy's
 *     versioned export sets READ_ONLY then), the same device rules and errors,
 *     because both paths end in tack_dlpack_import_described's validation;
 *   - only the common case is read here: C-contiguous, aligned, native byte order,
 *     a built-in number or bool dtype. Anything else (strided, misaligned, long
 *     double, datetimes, structured, user dtypes) goes through __dlpack__, whose
 *     refusals and copies are the rule for it; so does a byte-swapped array
 *     without a copy, which NumPy refuses, while with copy=True or None it is
 *     copied as tack.array copies it;
 *   - the fields are read only for a type that NumPy's own C-API table names as its
 *     ndarray, of ABI version 1 or 2: the fields used here (up to flags, and a
 *     descr's byteorder and type_num) are laid out the same in both. A subclass, a
 *     look-alike, or a later ABI is asked through __dlpack__.
 */
#include "tackpy.h"
#include <string.h>

/* The public head of NumPy's PyArrayObject_fields (ndarraytypes.h), the same in
 * ABI 1 and 2. */
typedef struct {
    PyObject_HEAD char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} numpy_array_head;

/* The head of NumPy's PyArray_Descr that ABI 1 and 2 share. */
typedef struct {
    PyObject_HEAD PyTypeObject *typeobj;
    char kind;
    char type;
    char byteorder;
    char former_flags;
    int type_num;
} numpy_descr_head;

/* NumPy's flag bits (ndarraytypes.h). */
enum {
    NUMPY_C_CONTIGUOUS = 0x0001,
    NUMPY_ALIGNED = 0x0100,
    NUMPY_WRITEABLE = 0x0400,
};

/* NumPy's built-in type numbers (enum NPY_TYPES) as DLPack dtypes, or bits 0 for a
 * type read through __dlpack__ instead. The C types behind them are this
 * platform's, as NumPy's are. */
#define NUMPY_TYPE_COUNT 24
static const struct {
    uint8_t code;
    uint8_t bits;
} numpy_dtypes[NUMPY_TYPE_COUNT] = {
    [0] = {kDLBool, 8},
    [1] = {kDLInt, 8 * sizeof(signed char)},
    [2] = {kDLUInt, 8 * sizeof(unsigned char)},
    [3] = {kDLInt, 8 * sizeof(short)},
    [4] = {kDLUInt, 8 * sizeof(unsigned short)},
    [5] = {kDLInt, 8 * sizeof(int)},
    [6] = {kDLUInt, 8 * sizeof(unsigned int)},
    [7] = {kDLInt, 8 * sizeof(long)},
    [8] = {kDLUInt, 8 * sizeof(unsigned long)},
    [9] = {kDLInt, 8 * sizeof(long long)},
    [10] = {kDLUInt, 8 * sizeof(unsigned long long)},
    [11] = {kDLFloat, 32},
    [12] = {kDLFloat, 64},
    /* 13 long double, 16 complex long double, 17-22 object, strings, void,
     * datetimes: __dlpack__ */
    [14] = {kDLComplex, 64},
    [15] = {kDLComplex, 128},
    [23] = {kDLFloat, 16},
};

/* The C-API table NumPy publishes as _ARRAY_API on its core module, if that module
 * is already imported (a NumPy array exists, so it is). Borrowed from the capsule,
 * which the module keeps; NULL without an exception otherwise. */
static void **
numpy_api_table(const char *module_name)
{
    PyObject *name = PyUnicode_FromString(module_name);
    PyObject *module = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyObject *capsule = module ? PyObject_GetAttrString(module, "_ARRAY_API") : NULL;
    Py_XDECREF(module);
    void **table = NULL;
    if (capsule && PyCapsule_CheckExact(capsule)) {
        table = PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
    }
    Py_XDECREF(capsule);
    PyErr_Clear();
    return table;
}

bool
tackpy_numpy_direct_type(PyTypeObject *tp)
{
    /* A class written in Python cannot be named this: its tp_name has no module. */
    if (strcmp(tp->tp_name, "numpy.ndarray") != 0 ||
        (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        tp->tp_basicsize < (Py_ssize_t)sizeof(numpy_array_head)) {
        return false;
    }
    static const char *const modules[] = {"numpy._core._multiarray_umath",
                                          "numpy.core._multiarray_umath"};
    for (size_t k = 0; k < sizeof modules / sizeof modules[0]; k++) {
        void **table = numpy_api_table(modules[k]);
        /* Entry 0 is PyArray_GetNDArrayCVersion (NPY_ABI_VERSION, major in the top
         * byte), entry 2 &PyArray_Type. */
        if (!table || table[2] != (void *)tp) {
            continue;
        }
        unsigned int abi = ((unsigned int (*)(void))table[0])();
        unsigned int major = abi >> 24;
        return major == 1 || major == 2;
    }
    return false;
}

int
tackpy_numpy_direct_import(tackpy_state *st, PyObject *x,
                           const tack_dlpack_import_options *opts, PyObject **result)
{
    const numpy_array_head *a = (const numpy_array_head *)x;
    const numpy_descr_head *d = (const numpy_descr_head *)a->descr;
    if (!d || d->type_num < 0 || d->type_num >= NUMPY_TYPE_COUNT ||
        numpy_dtypes[d->type_num].bits == 0 || a->nd < 0 || a->nd > TACK_MAX_NDIM) {
        return 0;
    }
    if (d->byteorder != '=' && d->byteorder != '|') {
        /* Another byte order: no DLPack tensor can describe it (NumPy's __dlpack__
         * refuses it). A copy, where one is allowed, is tack.array's, which swaps
         * the bytes. */
        if (opts->copy == TACK_DLPACK_COPY_NEVER) {
            return 0;
        }
        tack_device *dev = opts->device;
        tack_status status = TACK_OK;
        if (dev) {
            tack_device_retain(dev);
        }
        else {
            status = tack_default_device(&dev);
        }
        *result = status == TACK_OK ? tackpy_array_from_host(st, x, NULL, dev)
                                    : tackpy_raise(st, status);
        tack_device_release(dev);
        return 1;
    }
    const int need = NUMPY_C_CONTIGUOUS | NUMPY_ALIGNED;
    if ((a->flags & need) != need) {
        return 0;
    }
    int64_t shape[TACK_MAX_NDIM];
    for (int k = 0; k < a->nd; k++) {
        shape[k] = a->dimensions[k];
    }
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = a->data;
    t.device.device_type = kDLCPU;
    t.device.device_id = 0;
    t.ndim = a->nd;
    t.dtype.code = numpy_dtypes[d->type_num].code;
    t.dtype.bits = numpy_dtypes[d->type_num].bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    t.strides = NULL; /* C-contiguous: NumPy's flag, which ignores extents of 1 */
    t.byte_offset = 0;
    Py_INCREF(x); /* released by tackpy_release_object, even on failure */
    tack_array *arr;
    tack_status status = tack_dlpack_import_described(
        &t, (a->flags & NUMPY_WRITEABLE) != 0, tackpy_release_object, x, opts, &arr);
    st->numpy_direct_imports++;
    *result = status == TACK_OK ? tackpy_array_wrap(st, arr) : tackpy_raise(st, status);
    return 1;
}
