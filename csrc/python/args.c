/*
 * args.c: the extension's one argument parser, and shapes.
 *
 * Every keyword a function of the extension takes is in TACKPY_NAME_LIST, interned
 * once per module into its state; a call's keyword names (interned by the compiler
 * for literal keywords) are matched by identity first and by value only when that
 * fails, so a call such as __dlpack__(max_version=(1, 3)) costs a pointer compare.
 */
#include "tackpy.h"

int
tackpy_names_init(tackpy_state *st)
{
    static const char *const strings[TACKPY_NAME_COUNT] = {
#define NAME_STRING(n) #n,
        TACKPY_NAME_LIST(NAME_STRING)
#undef NAME_STRING
    };
    for (int k = 0; k < TACKPY_NAME_COUNT; k++) {
        st->names[k] = PyUnicode_InternFromString(strings[k]);
        if (!st->names[k]) {
            return -1;
        }
    }
    return 0;
}

/* The parameter of sig called key, or -1. */
static int
find_keyword(const tackpy_state *st, const tackpy_signature *sig, PyObject *key)
{
    for (int j = 0; j < sig->nparams; j++) {
        if (key == st->names[sig->params[j]]) {
            return j;
        }
    }
    for (int j = 0; j < sig->nparams; j++) {
        if (PyUnicode_Compare(key, st->names[sig->params[j]]) == 0) {
            return j;
        }
    }
    if (PyErr_Occurred()) {
        PyErr_Clear();
    }
    return -1;
}

int
tackpy_parse_slow(tackpy_state *st, const tackpy_signature *sig, PyObject *const *args,
                  Py_ssize_t nargs, PyObject *kwnames, const int *pos_slots,
                  PyObject **out, tackpy_extra *extra)
{
    for (int j = 0; j < sig->nparams; j++) {
        out[j] = NULL;
    }
    if (extra) {
        extra->n = 0;
    }
    if (nargs > sig->npos_max) {
        return tackpy_raise_fmt_int(
            st, TACK_ERR_BAD_TYPE,
            "%s() takes at most %d positional argument%s (%zd given)", sig->fname,
            sig->npos_max, sig->npos_max == 1 ? "" : "s", nargs);
    }
    for (Py_ssize_t k = 0; k < nargs; k++) {
        int slot = pos_slots ? pos_slots[k] : (int)k;
        if (out[slot]) {
            return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                        "%s() got two values for '%U' by position",
                                        sig->fname, st->names[sig->params[slot]]);
        }
        out[slot] = args[k];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = find_keyword(st, sig, key);
        if (found >= 0 && found < sig->npos_only) {
            found = -1; /* positional-only: an option of that name, or an error */
        }
        if (found < 0) {
            if (extra && extra->n < TACKPY_MAX_EXTRA) {
                extra->names[extra->n] = key;
                extra->values[extra->n++] = args[nargs + k];
                continue;
            }
            return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                        "%s() got an unexpected keyword argument '%U'",
                                        sig->fname, key);
        }
        if (out[found]) {
            return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                        "%s() got multiple values for argument '%U'",
                                        sig->fname, key);
        }
        out[found] = args[nargs + k];
    }
    for (int j = 0; j < sig->nrequired; j++) {
        if (!out[j]) {
            return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                        "%s() missing required argument '%U'",
                                        sig->fname, st->names[sig->params[j]]);
        }
    }
    return 0;
}

static int
parse_extent(tackpy_state *st, PyObject *item, int64_t *out)
{
    PyObject *index = PyNumber_Index(item);
    if (!index) {
        PyErr_Clear();
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                    "shape entries must be integers, not %.100s",
                                    Py_TYPE(item)->tp_name);
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return tackpy_raise_fmt_int(
            st, TACK_ERR_INVALID_ARGUMENT,
            "shape extent %R does not fit in 64 bits: use a smaller shape", item);
    }
    *out = (int64_t)v;
    return 0;
}

int
tackpy_parse_shape(tackpy_state *st, PyObject *obj, int64_t *shape)
{
    if (PyLong_Check(obj) || (!PySequence_Check(obj) && PyIndex_Check(obj))) {
        return parse_extent(st, obj, &shape[0]) < 0 ? -1 : 1;
    }
    /* Text is not a shape, though bytes are a sequence of ints (b"ab" is not
     * (97, 98)). A tuple, never the caller's list: an entry's __index__ may change
     * the list. */
    bool text = PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj);
    PyObject *seq = text ? NULL : PySequence_Tuple(obj);
    if (!seq) {
        PyErr_Clear();
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                    "shape must be an int or a sequence of ints, not "
                                    "%.100s",
                                    Py_TYPE(obj)->tp_name);
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > TACK_MAX_NDIM) {
        Py_DECREF(seq);
        return tackpy_raise_fmt_int(st, TACK_ERR_INVALID_ARGUMENT,
                                    "a shape has at most %d dimensions, not %zd",
                                    TACK_MAX_NDIM, n);
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (parse_extent(st, PyTuple_GET_ITEM(seq, k), &shape[k]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return (int)n;
}
