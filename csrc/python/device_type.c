/*
 * device_type.c: tack.Device and the functions tack.device(),
 * tack.set_default_device() and tack.get_default_device().
 *
 * Options are checked against the backend's declared option names before anything
 * is constructed: a misspelled or foreign keyword must never be silently ignored
 * (tack.device("cpu", external_context=...) would otherwise start a private context
 * while the caller believes memory is shared).
 */
#include "tackpy.h"
#include <string.h>

PyObject *
tackpy_device_wrap(tackpy_state *st, tack_device *dev)
{
    tackpy_Device *obj = PyObject_GC_New(tackpy_Device, st->Device_type);
    if (!obj) {
        tack_device_release(dev);
        return NULL;
    }
    obj->dev = dev;
    PyObject_GC_Track(obj);
    return (PyObject *)obj;
}

/* Reads the external_context option: a mapping with driver, device and context. */
static int
parse_external_context(tackpy_state *st, PyObject *value, tack_external_context *out)
{
    if (!PyDict_Check(value)) {
        tackpy_raise_fmt(
            st, TACK_ERR_INVALID_ARGUMENT,
            "external_context must be a dict with the integer handles 'driver', "
            "'device' and 'context', not %.100s",
            Py_TYPE(value)->tp_name);
        return -1;
    }
    static const char *const keys[] = {"driver", "device", "context"};
    uintptr_t *fields[] = {&out->driver, &out->device, &out->context};
    memset(out, 0, sizeof *out);
    for (unsigned k = 0; k < 3; k++) {
        /* Held, not borrowed: v's __index__ may empty the dict. */
        PyObject *v = PyDict_GetItemString(value, keys[k]);
        if (!v || v == Py_None) {
            continue;
        }
        Py_INCREF(v);
        PyObject *index = PyNumber_Index(v);
        if (!index) {
            PyErr_Clear();
            tackpy_raise_fmt(
                st, TACK_ERR_INVALID_ARGUMENT,
                "external_context['%s'] must be an integer handle, not %.100s", keys[k],
                Py_TYPE(v)->tp_name);
            Py_DECREF(v);
            return -1;
        }
        Py_DECREF(v);
        void *p = PyLong_AsVoidPtr(index);
        Py_DECREF(index);
        if (!p && PyErr_Occurred()) {
            PyErr_Clear();
            tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                             "external_context['%s'] is not a valid handle", keys[k]);
            return -1;
        }
        *fields[k] = (uintptr_t)p;
        out->present |= 1u << k;
    }
    return 0;
}

/* Opens a device from a name (possibly "name:N"), an ordinal and keyword options.
 * opts: the keyword options (may be NULL). */
static int
open_device(tackpy_state *st, PyObject *name_obj, PyObject *ordinal_obj,
            const tackpy_extra *opts, tack_device **out)
{
    if (!PyUnicode_Check(name_obj)) {
        tackpy_raise_fmt(
            st, TACK_ERR_BAD_TYPE,
            "a device name must be a str such as 'cpu' or 'cuda:1', not %.100s",
            Py_TYPE(name_obj)->tp_name);
        return -1;
    }
    const char *spec = PyUnicode_AsUTF8(name_obj);
    if (!spec) {
        return -1;
    }
    int ordinal = 0;
    if (ordinal_obj && ordinal_obj != Py_None) {
        long v = PyLong_AsLong(ordinal_obj);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (v < 0 || v > 1 << 20) {
            tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                             "device ordinal %ld is out of range: use 0 or more", v);
            return -1;
        }
        ordinal = (int)v;
    }
    char name[32];
    int given = ordinal;
    tack_status status = tack_device_parse(spec, name, sizeof name, &ordinal);
    if (status != TACK_OK) {
        return tackpy_raise_int(st, status);
    }
    if (ordinal_obj && ordinal_obj != Py_None && ordinal != given) {
        tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                         "device '%s' names ordinal %d but ordinal=%d was also given: "
                         "give the ordinal once",
                         spec, ordinal, given);
        return -1;
    }
    tack_external_context ext;
    tack_device_options options = {NULL};
    Py_ssize_t nopts = opts ? opts->n : 0;
    for (Py_ssize_t k = 0; k < nopts; k++) {
        const char *opt = PyUnicode_AsUTF8(opts->names[k]);
        if (!opt) {
            return -1;
        }
        if (!tack_device_accepts_option(name, opt)) {
            tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                             "the '%s' device does not accept the option '%s'%s", name,
                             opt,
                             strcmp(opt, "external_context") == 0
                                 ? ": external_context is a level_zero option"
                                 : ": check its spelling");
            return -1;
        }
        if (strcmp(opt, "external_context") == 0) {
            if (parse_external_context(st, opts->values[k], &ext) < 0) {
                return -1;
            }
            options.external_context = &ext;
        }
    }
    status = tack_device_open(name, ordinal, &options, out);
    if (status != TACK_OK) {
        return tackpy_raise_int(st, status);
    }
    return 0;
}

int
tackpy_device_from_object(tackpy_state *st, PyObject *obj, tack_device **out)
{
    if (!obj || obj == Py_None) {
        tack_status status = tack_default_device(out);
        return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
    }
    if (Py_IS_TYPE(obj, st->Device_type)) {
        tack_device *dev = ((tackpy_Device *)obj)->dev;
        tack_device_retain(dev);
        *out = dev;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        return open_device(st, obj, NULL, NULL, out);
    }
    tackpy_raise_fmt(
        st, TACK_ERR_BAD_TYPE,
        "device must be a tack.Device, a name such as 'cpu' or 'cuda:1', or None; "
        "not %.100s",
        Py_TYPE(obj)->tp_name);
    return -1;
}

/* tack.device(name, ordinal=0, **options) and set_default_device share this. */
static int
device_from_call(PyObject *module, const char *fname, PyObject *const *args,
                 Py_ssize_t nargs, PyObject *kwnames, tack_device **out)
{
    tackpy_state *st = PyModule_GetState(module);
    const tackpy_signature sig = {fname, 2, 2,
                                  0,     0, {TACKPY_NAME_name, TACKPY_NAME_ordinal}};
    PyObject *a[2];
    tackpy_extra options;
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, &options) < 0) {
        return -1;
    }
    PyObject *name = a[0], *ordinal = a[1];
    if (!name) {
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                    "%s() missing the device name, e.g. 'cpu'", fname);
    }
    if (Py_IS_TYPE(name, st->Device_type) && options.n == 0) {
        /* A Device as such; an ordinal beside it must agree. */
        tack_device *dev = ((tackpy_Device *)name)->dev;
        if (ordinal && ordinal != Py_None) {
            long v = PyLong_AsLong(ordinal);
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            if (v != tack_device_ordinal(dev)) {
                return tackpy_raise_fmt_int(
                    st, TACK_ERR_INVALID_ARGUMENT,
                    "ordinal=%ld contradicts the device given (%s:%d)", v,
                    tack_device_backend_name(dev), tack_device_ordinal(dev));
            }
        }
        return tackpy_device_from_object(st, name, out);
    }
    return open_device(st, name, ordinal, &options, out);
}

PyObject *
tackpy_device_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    tack_device *dev = NULL;
    if (device_from_call(module, "device", args, nargs, kwnames, &dev) < 0) {
        return NULL;
    }
    return tackpy_device_wrap(PyModule_GetState(module), dev);
}

PyObject *
tackpy_set_default_device_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    tack_device *dev = NULL;
    if (device_from_call(module, "set_default_device", args, nargs, kwnames, &dev) <
        0) {
        return NULL;
    }
    tack_set_default_device(dev);
    return tackpy_device_wrap(PyModule_GetState(module), dev);
}

PyObject *
tackpy_get_default_device_fn(PyObject *module, PyObject *unused)
{
    (void)unused;
    tackpy_state *st = PyModule_GetState(module);
    tack_device *dev = NULL;
    tack_status status = tack_default_device(&dev);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_device_wrap(st, dev);
}

/* ---- the Device type ---------------------------------------------------------- */

static tack_device *
dev_of(PyObject *self)
{
    return ((tackpy_Device *)self)->dev;
}

static PyObject *
device_repr(PyObject *self)
{
    tack_device *dev = dev_of(self);
    /* The driver library is shown, so a run on a stand-in driver is never taken for
     * a run on the GPU. */
    const char *driver = tack_device_driver_path(dev);
    return PyUnicode_FromFormat(
        "tack.device('%s', %d%s)%s%s%s", tack_device_backend_name(dev),
        tack_device_ordinal(dev),
        tack_device_has_external_context(dev) ? ", external_context=..." : "",
        driver ? " (driver " : "", driver ? driver : "", driver ? ")" : "");
}

static PyObject *
device_str(PyObject *self)
{
    tack_device *dev = dev_of(self);
    return PyUnicode_FromFormat("%s:%d", tack_device_backend_name(dev),
                                tack_device_ordinal(dev));
}

static PyObject *
device_richcompare(PyObject *self, PyObject *other, int op)
{
    tackpy_state *st = tackpy_state_of_type(Py_TYPE(self));
    if ((op != Py_EQ && op != Py_NE) || !Py_IS_TYPE(other, st->Device_type)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int equal = dev_of(self) == dev_of(other);
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static Py_hash_t
device_hash(PyObject *self)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)dev_of(self) >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *
device_get_name(PyObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(tack_device_backend_name(dev_of(self)));
}

static PyObject *
device_get_ordinal(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(tack_device_ordinal(dev_of(self)));
}

static PyObject *
device_get_memory_domain(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(tack_device_memory_domain(dev_of(self)));
}

static PyObject *
device_get_dlpack(PyObject *self, void *c)
{
    (void)c;
    tack_device *dev = dev_of(self);
    return Py_BuildValue("(ii)", tack_device_dlpack_type(dev),
                         tack_device_ordinal(dev));
}

static PyObject *
device_get_shares_external_context(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tack_device_has_external_context(dev_of(self)));
}

/* The adopted handles, as the runtime keeps them, or None. */
static PyObject *
device_get_external_context(PyObject *self, void *c)
{
    (void)c;
    tack_external_context ext;
    if (!tack_device_external_context(dev_of(self), &ext)) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("{sNsNsN}", "driver", PyLong_FromVoidPtr((void *)ext.driver),
                         "device", PyLong_FromVoidPtr((void *)ext.device), "context",
                         PyLong_FromVoidPtr((void *)ext.context));
}

static PyObject *
device_synchronize(PyObject *self, PyObject *unused)
{
    (void)unused;
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_device_synchronize(dev_of(self));
    Py_END_ALLOW_THREADS
    if (status != TACK_OK) {
        return tackpy_raise(tackpy_state_of_type(Py_TYPE(self)), status);
    }
    Py_RETURN_NONE;
}

static PyGetSetDef device_getset[] = {
    {"name", device_get_name, NULL, "The backend: 'cpu', 'cuda', 'hip', 'level_zero'.",
     NULL},
    {"backend", device_get_name, NULL, "Same as name.", NULL},
    {"ordinal", device_get_ordinal, NULL, "The device number within its backend.",
     NULL},
    {"memory_domain", device_get_memory_domain, NULL,
     "Arrays meet in one launch only if their devices' domains are equal.", NULL},
    {"dlpack_device", device_get_dlpack, NULL, "(DLPack device type, device id).",
     NULL},
    {"shares_external_context", device_get_shares_external_context, NULL,
     "Whether the device was opened in another library's context.", NULL},
    {"external_context", device_get_external_context, NULL,
     "The driver, device and context handles the device was opened with (a new dict), "
     "or None.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Pickling and copying: tack.device(name, ordinal) makes the same registry device.
 * A device in another library's context cannot travel: its handles are this
 * process's. */
static PyObject *
device_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    tack_device *dev = dev_of(self);
    tackpy_state *st = tackpy_state_of_type(Py_TYPE(self));
    if (tack_device_has_external_context(dev)) {
        return tackpy_raise_fmt(
            st, TACK_ERR_BAD_TYPE,
            "a device opened with external_context cannot be "
            "pickled or copied: its handles belong to this process");
    }
    PyObject *module = PyType_GetModuleByDef(Py_TYPE(self), &tackpy_module_def);
    PyObject *fn = module ? PyObject_GetAttrString(module, "device") : NULL;
    if (!fn) {
        return NULL;
    }
    PyObject *r = Py_BuildValue("(N(si))", fn, tack_device_backend_name(dev),
                                tack_device_ordinal(dev));
    return r;
}

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, NULL},
    {"synchronize", device_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\nWait for every launch queued on the device."},
    {NULL, NULL, 0, NULL},
};

static int
device_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static void
device_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    tack_device_release(dev_of(self));
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot device_slots[] = {
    {Py_tp_repr, device_repr},
    {Py_tp_str, device_str},
    {Py_tp_hash, device_hash},
    {Py_tp_richcompare, device_richcompare},
    {Py_tp_getset, device_getset},
    {Py_tp_methods, device_methods},
    {Py_tp_traverse, device_traverse},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_doc, "A device: a backend and an ordinal. Make one with tack.device()."},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "tack.Device",
    .basicsize = sizeof(tackpy_Device),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_slots,
};

int
tackpy_device_init(PyObject *module, tackpy_state *st)
{
    st->Device_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &device_spec, NULL);
    if (!st->Device_type || PyModule_AddType(module, st->Device_type) < 0) {
        return -1;
    }
    return 0;
}
