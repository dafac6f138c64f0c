/*
 * runtime_copies.c: one runtime per process. The extension links the libtack the
 * package carries (tack/lib, or beside the extension in a build tree). A program that
 * embeds Python may have loaded another copy first (the prefix install of a C host):
 *
 *   - loaded with global symbols (linked by the program, or dlopen'ed RTLD_GLOBAL),
 *     the dynamic linker binds the extension's calls to it, and the package's copy is
 *     loaded but never called. One runtime: accepted when its version is the
 *     extension's, refused otherwise (the structures it was built against differ);
 *   - loaded with local symbols (dlopen'ed RTLD_LOCAL by a plugin), the extension
 *     binds to the package's copy and the process would hold two runtimes, each with
 *     its own devices, thread pool and kernel cache: refused.
 *
 * The copies are found by asking every loaded object for tack_version and keeping the
 * distinct libraries that define it. Import fails with ImportError naming the copies
 * and how to keep one.
 */
#include "tackpy.h" /* Python.h first; it defines _GNU_SOURCE, for dladdr */

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/* The runtime functions' addresses as this extension resolved them. */
static const char *(*const runtime_probe)(void) = tack_version;

/* The loaded objects' names, copied out of dl_iterate_phdr (whose lock dlopen also
 * takes, so nothing is opened inside the callback). */
typedef struct {
    char **names;
    size_t count, cap;
    int failed; /* out of memory: the list is incomplete */
} object_names;

static int
collect_name(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    object_names *o = data;
    if (!info->dlpi_name || !info->dlpi_name[0]) {
        return 0; /* the program itself: its libtack is an object of its own */
    }
    if (o->count == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        char **grown = PyMem_RawRealloc(o->names, cap * sizeof *grown);
        if (!grown) {
            o->failed = 1;
            return 1;
        }
        o->names = grown;
        o->cap = cap;
    }
    size_t n = strlen(info->dlpi_name) + 1;
    char *copy = PyMem_RawMalloc(n);
    if (!copy) {
        o->failed = 1;
        return 1;
    }
    memcpy(copy, info->dlpi_name, n);
    o->names[o->count++] = copy;
    return 0;
}

/* The file that defines the function at fn (a canonical path when it resolves). */
static void
library_of(const void *fn, char *out, size_t cap)
{
    Dl_info info;
    const char *name = dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
    char real[PATH_MAX];
    snprintf(out, cap, "%s", realpath(name, real) ? real : name);
}

/* Whether path is the package's own copy: in the extension's folder or its lib/. */
static int
is_package_copy(const char *path)
{
    char ext[PATH_MAX];
    library_of((const void *)collect_name, ext, sizeof ext);
    char *slash = strrchr(ext, '/');
    if (!slash) {
        return 0;
    }
    size_t dir = (size_t)(slash - ext);
    if (strncmp(path, ext, dir) != 0 || path[dir] != '/') {
        return 0;
    }
    const char *rest = path + dir + 1;
    return strcmp(rest, "libtack.so") == 0 || strcmp(rest, "lib/libtack.so") == 0;
}

/* The first copy of tack_version among the loaded objects that is neither the one
 * in use nor the package's unused own copy: 1 when there is one, 0 when not, -1
 * (MemoryError set) when the objects could not be listed. *own gets the package's
 * copy when it is loaded (else it is left as it was). */
static int
find_other_copy(const char *used, char *other, char *own, size_t cap)
{
    object_names o = {NULL, 0, 0, 0};
    dl_iterate_phdr(collect_name, &o);
    int found = o.failed ? -1 : 0;
    for (size_t k = 0; k < o.count; k++) {
        void *handle = dlopen(o.names[k], RTLD_LAZY | RTLD_NOLOAD);
        void *sym = handle ? dlsym(handle, "tack_version") : NULL;
        if (sym) {
            char path[PATH_MAX];
            library_of(sym, path, sizeof path);
            if (is_package_copy(path)) {
                snprintf(own, cap, "%s", path);
            }
            else if (found == 0 && strcmp(path, used) != 0) {
                snprintf(other, cap, "%s", path);
                found = 1;
            }
        }
        if (handle) {
            dlclose(handle);
        }
        PyMem_RawFree(o.names[k]);
    }
    PyMem_RawFree(o.names);
    if (found < 0) {
        PyErr_NoMemory();
    }
    return found;
}

int
tackpy_runtime_check(void)
{
    char used[PATH_MAX], other[PATH_MAX], own[PATH_MAX] = "the package's tack/lib";
    library_of((const void *)runtime_probe, used, sizeof used);
    int two = find_other_copy(used, other, own, sizeof used);
    if (two < 0) {
        return -1;
    }
    if (strcmp(runtime_probe(), TACK_VERSION) != 0) {
        PyErr_Format(PyExc_ImportError,
                     "tack %s found libtack %s already loaded from %s, in place of its "
                     "own copy %s: build the program against the package's copy "
                     "(python -m tack --cflags --libs), or install the same version "
                     "of both",
                     TACK_VERSION, runtime_probe(), used, own);
        return -1;
    }
    if (two) {
        PyErr_Format(PyExc_ImportError,
                     "two copies of libtack are loaded, %s (which tack uses) and %s "
                     "(loaded with local symbols): they would be two runtimes with "
                     "their own devices, threads and kernel caches. Load one copy: "
                     "link the program with python -m tack --cflags --libs, or load "
                     "%s with RTLD_GLOBAL before importing tack",
                     used, other, other);
        return -1;
    }
    return 0;
}

PyObject *
tackpy_runtime_library_fn(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    char used[PATH_MAX];
    library_of((const void *)runtime_probe, used, sizeof used);
    return PyUnicode_DecodeFSDefault(used);
}

int
tackpy_check_runtime_of_host(const char *(*host_version)(void))
{
    if (host_version == runtime_probe) {
        return 0;
    }
    char used[PATH_MAX], host[PATH_MAX];
    library_of((const void *)runtime_probe, used, sizeof used);
    library_of((const void *)host_version, host, sizeof host);
    char msg[2 * PATH_MAX + 256];
    snprintf(msg, sizeof msg,
             "this program links libtack %s, but tack uses %s: two runtimes share "
             "no arrays. Build the program with python -m tack --cflags --libs",
             host, used);
    tack_set_error(TACK_ERR_UNSUPPORTED, msg);
    PyErr_SetString(PyExc_ImportError, msg);
    return -1;
}
