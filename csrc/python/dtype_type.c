/*
 * dtype_type.c: tack.dtype, one immutable singleton per element type
 * (tack.float32 is tack.f32). Arguments that take a dtype also accept its name,
 * its alias, and anything numpy.dtype() understands.
 */
#include "tackpy.h"
#include <string.h>

PyObject *
tackpy_dtype_object(tackpy_state *st, tack_dtype dtype)
{
    return st->dtypes[dtype];
}

int
tackpy_dtype_from_object(tackpy_state *st, PyObject *obj, tack_dtype *out)
{
    if (Py_IS_TYPE(obj, st->DType_type)) {
        *out = ((tackpy_DType *)obj)->dtype;
        return 0;
    }
    tack_status status;
    if (PyUnicode_Check(obj)) {
        /* Strings follow the runtime's one rule (tack_dtype_from_name), so Python
         * and a C host read "i8" or "float" alike. */
        Py_ssize_t len;
        const char *name = PyUnicode_AsUTF8AndSize(obj, &len);
        if (!name) {
            return -1;
        }
        if ((size_t)len != strlen(name)) {
            /* The C rule reads up to the first NUL: "f4\0junk" must not be f4. */
            tackpy_raise_fmt_int(st, TACK_ERR_BAD_DTYPE,
                                 "the dtype name %R contains a NUL character", obj);
            return -1;
        }
        status = tack_dtype_from_name(name, out);
        return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
    }
    /* Any other object NumPy understands (np.float32, np.dtype("f4"), float): its
     * NumPy type string ("<f4") under the same rule. */
    PyObject *np = tackpy_numpy(st);
    if (!np) {
        return -1;
    }
    PyObject *npdt = PyObject_CallMethod(np, "dtype", "O", obj);
    PyObject *str = npdt ? PyObject_GetAttrString(npdt, "str") : NULL;
    Py_XDECREF(npdt);
    const char *s = str && PyUnicode_Check(str) ? PyUnicode_AsUTF8(str) : NULL;
    status = s ? tack_dtype_from_name(s, out) : TACK_ERR_BAD_DTYPE;
    Py_XDECREF(str);
    if (status == TACK_OK) {
        return 0;
    }
    PyErr_Clear();
    tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                     "%R is not a Tack dtype: use tack.bool, tack.int8..int64, "
                     "tack.uint8..uint64, tack.float16/32/64 or tack.vec2/3/4",
                     obj);
    return -1;
}

static PyObject *
dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("tack.%s",
                                tack_dtype_get(((tackpy_DType *)self)->dtype)->name);
}

static PyObject *
dtype_str(PyObject *self)
{
    return PyUnicode_FromString(tack_dtype_get(((tackpy_DType *)self)->dtype)->name);
}

static Py_hash_t
dtype_hash(PyObject *self)
{
    PyObject *name = dtype_str(self);
    if (!name) {
        return -1;
    }
    Py_hash_t h = PyObject_Hash(name);
    Py_DECREF(name);
    return h;
}

static PyObject *
dtype_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    tackpy_state *st = tackpy_state_of_type(Py_TYPE(self));
    tack_dtype mine = ((tackpy_DType *)self)->dtype;
    tack_dtype theirs;
    int equal;
    if (Py_IS_TYPE(other, st->DType_type)) {
        equal = ((tackpy_DType *)other)->dtype == mine;
    }
    else if (other == Py_None) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    else {
        /* NumPy dtypes and scalar types compare equal to their Tack counterpart. */
        if (tackpy_dtype_from_object(st, other, &theirs) < 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        equal = theirs == mine;
    }
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyObject *
dtype_get_name(PyObject *self, void *c)
{
    (void)c;
    return dtype_str(self);
}

static PyObject *
dtype_get_itemsize(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(tack_dtype_get(((tackpy_DType *)self)->dtype)->itemsize);
}

static PyObject *
dtype_get_ncomponents(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(tack_dtype_get(((tackpy_DType *)self)->dtype)->ncomponents);
}

static PyObject *
dtype_get_kind(PyObject *self, void *c)
{
    (void)c;
    char kind = tack_dtype_get(((tackpy_DType *)self)->dtype)->kind;
    return PyUnicode_FromStringAndSize(&kind, 1);
}

static PyObject *
dtype_get_numpy_str(PyObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(
        tack_dtype_get(((tackpy_DType *)self)->dtype)->numpy_str);
}

PyObject *
tackpy_dtype_to_numpy(tackpy_state *st, tack_dtype dtype)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    PyObject *np = tackpy_numpy(st);
    if (!np) {
        return NULL;
    }
    if (info->ncomponents > 1) {
        return PyObject_CallMethod(np, "dtype", "((s(i)))", info->numpy_str,
                                   (int)info->ncomponents);
    }
    return PyObject_CallMethod(np, "dtype", "s", info->numpy_str);
}

/* numpy.dtype() asks an object for __numpy_dtype__ (NumPy 2.4) or for a .dtype that
 * is a numpy.dtype, so np.dtype(tack.float32) and np.zeros(3, dtype=tack.vec3)
 * work; vec types are float32 subarrays. */
static PyObject *
dtype_get_numpy_dtype(PyObject *self, void *c)
{
    (void)c;
    return tackpy_dtype_to_numpy(tackpy_state_of_type(Py_TYPE(self)),
                                 ((tackpy_DType *)self)->dtype);
}

/* Pickling and copying give back the module constant: dtypes are singletons. */
static PyObject *
dtype_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(tack_dtype_get(((tackpy_DType *)self)->dtype)->name);
}

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dtype_getset[] = {
    {"dtype", dtype_get_numpy_dtype, NULL,
     "The NumPy dtype spelling (for numpy.dtype()).", NULL},
    {"__numpy_dtype__", dtype_get_numpy_dtype, NULL, "The NumPy dtype.", NULL},
    {"name", dtype_get_name, NULL, "The dtype's name, e.g. 'float32'.", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "Bytes per element.", NULL},
    {"ncomponents", dtype_get_ncomponents, NULL, "1, or 2..4 for the vec types.", NULL},
    {"kind", dtype_get_kind, NULL, "'b' bool, 'i' signed, 'u' unsigned, 'f' float.",
     NULL},
    {"numpy_str", dtype_get_numpy_str, NULL, "The NumPy type string of the scalar.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int
dtype_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static void
dtype_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot dtype_slots[] = {
    {Py_tp_repr, dtype_repr},
    {Py_tp_str, dtype_str},
    {Py_tp_hash, dtype_hash},
    {Py_tp_richcompare, dtype_richcompare},
    {Py_tp_getset, dtype_getset},
    {Py_tp_methods, dtype_methods},
    {Py_tp_traverse, dtype_traverse},
    {Py_tp_dealloc, dtype_dealloc},
    {Py_tp_doc,
     "An element type of Tack arrays. The instances are module constants "
     "(tack.float32 is tack.f32); there is no constructor."},
    {0, NULL},
};

static PyType_Spec dtype_spec = {
    .name = "tack.dtype",
    .basicsize = sizeof(tackpy_DType),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dtype_slots,
};

int
tackpy_dtype_init(PyObject *module, tackpy_state *st)
{
    st->DType_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &dtype_spec, NULL);
    if (!st->DType_type || PyModule_AddType(module, st->DType_type) < 0) {
        return -1;
    }
    for (int k = 0; k < TACK_DTYPE_COUNT; k++) {
        tackpy_DType *obj = PyObject_GC_New(tackpy_DType, st->DType_type);
        if (!obj) {
            return -1;
        }
        obj->dtype = (tack_dtype)k;
        PyObject_GC_Track(obj);
        st->dtypes[k] = (PyObject *)obj;
        const tack_dtype_info *info = tack_dtype_get((tack_dtype)k);
        if (PyModule_AddObjectRef(module, info->name, (PyObject *)obj) < 0) {
            return -1;
        }
        if (strcmp(info->alias, info->name) != 0 &&
            PyModule_AddObjectRef(module, info->alias, (PyObject *)obj) < 0) {
            return -1;
        }
    }
    return 0;
}
