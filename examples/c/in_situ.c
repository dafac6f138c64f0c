/*
 * in_situ.c: a 2-D heat simulation in C that hands its field to Python for in situ
 * analysis, without copying it (docs/in_situ.md walks through it).
 *
 * The field is N x N doubles on the host: a hot square in the middle, the boundary
 * held at 0, an explicit 5-point stencil per step. Every K steps the host lends the
 * field to examples/c/in_situ_analysis.py, a script run in the embedded interpreter:
 * its analyse(field, step, outdir) runs a Tack kernel on the field's own memory,
 * NumPy on a view of the same memory, writes a picture (and a VTK image when VTK
 * imports), and returns the peak temperature, which decides when the loop stops.
 * With --device cuda the host lends a device copy of its field instead, as a GPU
 * code would have it. --no-python computes the same peak in C: the reference the
 * Python run is checked against.
 *
 * Build through the installed package (one libtack for the host and Python):
 *
 *   cc -std=c11 in_situ.c $(python -m tack --cflags --libs) \
 *      $(python3-config --embed --cflags --ldflags) -o in_situ
 *
 *   in_situ [--python PATH] [--script PATH] [--out DIR] [--device cpu|cuda]
 *           [--size N] [--every K] [--steps MAX] [--stop PEAK] [--no-python]
 *
 * --python names the interpreter whose environment (venv, sys.path) the embedded one
 * takes. Prints one line per analysis and the final state; exits 0, or 1 on a failure
 * (a view the script kept, a copy where none was expected, a Tack or Python error).
 */
#include <tack/python.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    const char *python, *script, *out, *device;
    int n, every, max_steps;
    double stop;
    int use_python;
} options;

/* The simulation's state: two buffers swapped every step. */
typedef struct heat {
    int n;
    double *t, *next;
    int still_lent; /* a reclaim was refused: Python may still reach t, never free it */
} heat;

static int
heat_init(heat *h, int n)
{
    h->n = n;
    h->t = calloc((size_t)n * (size_t)n, sizeof(double));
    h->next = calloc((size_t)n * (size_t)n, sizeof(double));
    if (!h->t || !h->next) {
        return -1;
    }
    int lo = n / 2 - n / 16, hi = n / 2 + n / 16;
    for (int i = lo; i < hi; i++) {
        for (int j = lo; j < hi; j++) {
            h->t[(size_t)i * (size_t)n + (size_t)j] = 100.0;
        }
    }
    return 0;
}

/* One explicit step, r = dt * alpha / dx^2 = 0.2 (stable below 0.25); the boundary
 * rows and columns stay 0. */
static void
heat_step(heat *h)
{
    const double r = 0.2;
    size_t n = (size_t)h->n;
    for (size_t i = 1; i + 1 < n; i++) {
        for (size_t j = 1; j + 1 < n; j++) {
            const double *c = h->t + i * n + j;
            h->next[i * n + j] =
                *c + r * (c[-1] + c[1] + c[-(ptrdiff_t)n] + c[n] - 4 * *c);
        }
    }
    double *swap = h->t;
    h->t = h->next;
    h->next = swap;
}

/* The C-only analysis: what the script computes, in the same terms. */
static void
heat_measure(const heat *h, double *peak, double *total)
{
    size_t count = (size_t)h->n * (size_t)h->n;
    *peak = h->t[0];
    *total = 0.0;
    for (size_t k = 0; k < count; k++) {
        *peak = h->t[k] > *peak ? h->t[k] : *peak;
        *total += h->t[k];
    }
}

/* The script as a module: its text compiled and executed as in_situ_analysis. */
static PyObject *
load_script(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        PyErr_Format(PyExc_OSError, "cannot open the analysis script %s", path);
        return NULL;
    }
    char *text = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1))) {
        size_t got = fread(text, 1, (size_t)size, f);
        text[got] = '\0';
    }
    fclose(f);
    if (!text) {
        PyErr_Format(PyExc_OSError, "cannot read the analysis script %s", path);
        return NULL;
    }
    PyObject *code = Py_CompileString(text, path, Py_file_input);
    free(text);
    PyObject *module = code ? PyImport_ExecCodeModule("in_situ_analysis", code) : NULL;
    Py_XDECREF(code);
    return module;
}

/* The array lent to Python: the host field itself on the CPU (wrapped: its memory
 * stays the host's), a new device copy of it on CUDA. */
static tack_status
lend_field(tack_device *dev, const heat *h, tack_array **out)
{
    int64_t shape[2] = {h->n, h->n};
    if (strcmp(tack_device_backend_name(dev), "cpu") == 0) {
        return tack_array_wrap_memory(dev, h->t, TACK_FLOAT64, 2, shape, true, NULL,
                                      NULL, out);
    }
    tack_array *copy;
    tack_status st =
        tack_array_empty(dev, TACK_FLOAT64, 2, shape, TACK_BUFFER_WRITABLE, &copy);
    if (st == TACK_OK) {
        st = tack_array_copy_from_host(copy, h->t, TACK_FLOAT64,
                                       (size_t)h->n * (size_t)h->n);
        if (st != TACK_OK) {
            tack_array_release(copy);
        }
        else {
            *out = copy;
        }
    }
    return st;
}

/* One analysis by the script: lends the field, calls analyse(field, step, outdir),
 * takes the field back. Out: *peak and *total on success (0); -1 on failure, with
 * the reason printed. */
static int
analyse_in_python(PyObject *analyse, tack_device *dev, heat *h, int step,
                  const char *outdir, double *peak, double *total)
{
    tack_array *field;
    tack_status st = lend_field(dev, h, &field);
    if (st != TACK_OK) {
        fprintf(stderr, "in_situ: lending the field: %s\n", tack_last_error());
        return -1;
    }
    PyObject *view = tack_py_from_array(field, TACK_PY_NO_STREAM);
    PyObject *result =
        view ? PyObject_CallFunction(analyse, "Ois", view, step, outdir) : NULL;
    Py_XDECREF(view);
    unsigned long long seen = 0;
    int ok = result && PyArg_ParseTuple(result, "ddK", peak, total, &seen);
    Py_XDECREF(result);
    if (!ok) {
        PyErr_Print();
        tack_array_release(field);
        return -1;
    }
    /* The address NumPy (or, on CUDA, the kernel) saw is the one lent: no copy. */
    void *lent = tack_array_data(field);
    /* Before the next step overwrites the field, every view the script made must be
     * gone: a reclaim that succeeds says nothing reaches the memory any more. */
    st = tack_array_reclaim(field);
    if (st != TACK_OK) {
        fprintf(stderr, "in_situ: %s\n", tack_last_error());
        h->still_lent = 1;
        return -1;
    }
    if ((void *)(uintptr_t)seen != lent) {
        fprintf(stderr, "in_situ: the script saw %#llx, not the field at %p\n", seen,
                lent);
        return -1;
    }
    return 0;
}

static int
parse(int argc, char **argv, options *o)
{
    *o = (options){
        NULL, "examples/c/in_situ_analysis.py", ".", "cpu", 256, 10, 2000, 50.0, 1};
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (strcmp(a, "--no-python") == 0) {
            o->use_python = 0;
            continue;
        }
        if (!v) {
            fprintf(stderr, "in_situ: unknown or incomplete option %s\n", a);
            return -1;
        }
        k++;
        if (strcmp(a, "--python") == 0)
            o->python = v;
        else if (strcmp(a, "--script") == 0)
            o->script = v;
        else if (strcmp(a, "--out") == 0)
            o->out = v;
        else if (strcmp(a, "--device") == 0)
            o->device = v;
        else if (strcmp(a, "--size") == 0)
            o->n = atoi(v);
        else if (strcmp(a, "--every") == 0)
            o->every = atoi(v);
        else if (strcmp(a, "--steps") == 0)
            o->max_steps = atoi(v);
        else if (strcmp(a, "--stop") == 0)
            o->stop = atof(v);
        else {
            fprintf(stderr, "in_situ: unknown option %s\n", a);
            return -1;
        }
    }
    if (o->n < 8 || o->every < 1 || o->max_steps < 1) {
        fprintf(stderr, "in_situ: --size must be at least 8, --every and --steps 1\n");
        return -1;
    }
    return 0;
}

static int
start_python(const options *o, PyObject **analyse)
{
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    PyStatus status = PyStatus_Ok();
    if (o->python) {
        status = PyConfig_SetBytesString(&config, &config.program_name, o->python);
    }
    if (!PyStatus_Exception(status)) {
        status = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "in_situ: Python did not start: %s\n",
                status.err_msg ? status.err_msg : "?");
        return -1;
    }
    PyObject *module = NULL;
    if (tack_py_import() == 0 && (module = load_script(o->script))) {
        *analyse = PyObject_GetAttrString(module, "analyse");
        Py_DECREF(module);
    }
    if (!module || !*analyse) {
        PyErr_Print();
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    options o;
    heat h = {0, NULL, NULL, 0};
    tack_device *dev = NULL;
    PyObject *analyse = NULL;
    int rc = 1;
    if (parse(argc, argv, &o) < 0 || heat_init(&h, o.n) < 0) {
        goto done;
    }
    if (tack_device_open(o.device, 0, NULL, &dev) != TACK_OK) {
        fprintf(stderr, "in_situ: %s\n", tack_last_error());
        goto done;
    }
    if (o.use_python && start_python(&o, &analyse) < 0) {
        goto done;
    }
    int step = 0;
    double peak = 0.0, total = 0.0;
    do {
        for (int k = 0; k < o.every && step < o.max_steps; k++, step++) {
            heat_step(&h);
        }
        if (!o.use_python) {
            heat_measure(&h, &peak, &total);
        }
        else if (analyse_in_python(analyse, dev, &h, step, o.out, &peak, &total) < 0) {
            goto done;
        }
        printf("step=%d peak=%.17g total=%.17g\n", step, peak, total);
    } while (peak >= o.stop && step < o.max_steps);
    /* The state of the whole field, for comparing runs. */
    double squares = 0.0;
    for (size_t k = 0; k < (size_t)o.n * (size_t)o.n; k++) {
        squares += h.t[k] * h.t[k];
    }
    printf("stopped step=%d peak=%.17g norm=%.17g\n", step, peak, sqrt(squares));
    rc = 0;
done:
    if (Py_IsInitialized()) {
        Py_XDECREF(analyse);
        if (Py_FinalizeEx() < 0) {
            rc = 1;
        }
    }
    tack_device_release(dev);
    if (!h.still_lent) {
        free(h.t);
    }
    free(h.next);
    return rc;
}
