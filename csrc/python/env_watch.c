/*
 * env_watch.c: TACK_DEBUG as a kernel call reads it, without a getenv per call.
 *
 * A kernel decorated without debug= follows TACK_DEBUG at every call, and a change
 * made from Python (os.environ, monkeypatch.setenv) must reach the next call.
 * getenv compares the name against every entry of the environment, which was a
 * fifth of a 16-element launch. Instead the watcher keeps a copy of the environment's
 * entry pointers and where TACK_DEBUG's entry was; a call compares the pointers
 * (no string is touched) and reads the value of the entry it found.
 *
 * What must stay true: every change of the environment through setenv, putenv,
 * unsetenv or clearenv (os.environ uses them) changes that pointer array or the
 * environ pointer itself: a new or changed variable stores a new entry pointer, a
 * removal shifts the later entries down or ends the array earlier, an addition
 * replaces its terminator. The value is read from the entry on every call, so an
 * entry whose text is changed in place (a putenv'd buffer) is seen too; only an
 * in-place edit that renames some other entry into TACK_DEBUG would be missed. The
 * watcher lives in the module state and is used with
 * the GIL held, like getenv's own callers must not race setenv.
 */
#include "tackpy.h"
#include <string.h>

extern char **environ;

#define NAME "TACK_DEBUG="

/* The debug flag's reading of a value (tack_kernel_debug_default's rule): set, not
 * empty and not "0". */
static bool
flag_of(const char *entry)
{
    const char *v = entry + sizeof NAME - 1;
    return v[0] && strcmp(v, "0") != 0;
}

/* Whether env is still the array the snapshot was taken of: the same address and
 * the same n + 1 slots, the last of them the terminator. Branch-free, so that the
 * compiler compares several pointers per instruction. Reading n + 1 slots stays
 * within the array: at this address it had them when the snapshot was taken, and
 * the C library grows the array by moving it and never shrinks it in place
 * (unsetenv shifts the later entries down over the removed one). */
static bool
unchanged(const tackpy_env_watch *w, char *const *env)
{
    if (!w->entries || env != w->environ_seen) {
        return false;
    }
    uintptr_t diff = 0;
    for (size_t i = 0; i <= w->nentries; i++) {
        diff |= (uintptr_t)env[i] ^ (uintptr_t)w->entries[i];
    }
    return diff == 0;
}

/* A new snapshot of env. On failure (no memory) the watcher is left empty and the
 * call reads the environment with getenv instead. */
static void
snapshot(tackpy_env_watch *w, char **env)
{
    size_t n = 0;
    while (env && env[n]) {
        n++;
    }
    if (n + 1 > w->cap) {
        char **grown = PyMem_Realloc(w->entries, (n + 1) * sizeof *grown);
        if (!grown) {
            tackpy_env_watch_free(w);
            return;
        }
        w->entries = grown;
        w->cap = n + 1;
    }
    w->entry = NULL;
    for (size_t i = 0; i < n; i++) {
        w->entries[i] = env[i];
        if (!w->entry && strncmp(env[i], NAME, sizeof NAME - 1) == 0) {
            w->entry = env[i]; /* getenv's answer: the first match */
        }
    }
    w->entries[n] = NULL;
    w->nentries = n;
    w->environ_seen = env;
}

bool
tackpy_env_debug(tackpy_env_watch *w)
{
    char **env = environ;
    if (!unchanged(w, env)) {
        snapshot(w, env);
        if (!w->entries) {
            return tack_kernel_debug_default();
        }
    }
    return w->entry && flag_of(w->entry);
}

void
tackpy_env_watch_free(tackpy_env_watch *w)
{
    PyMem_Free(w->entries);
    *w = (tackpy_env_watch){0};
}
