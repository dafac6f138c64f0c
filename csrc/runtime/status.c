/*
 * status.c: status names and messages from the X-macro, and the thread-local
 * last-error message.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Long enough for a message that names a shape, a dtype and what to do instead, or
 * that carries the first 4 KiB of a driver's build log (level_zero_kernel.c). */
#define TACK__ERROR_CAP 8192

/* The last failure of this thread: the problem, its remedy and (debug builds) where
 * it started; last_error is the three composed for C callers. */
static _Thread_local char last_error[TACK__ERROR_CAP];
static _Thread_local char last_problem[TACK__ERROR_CAP];
static _Thread_local char last_origin[128];
static _Thread_local tack_remedy last_remedy;

static const struct {
    const char *name;
    const char *message;
    tack_error_kind kind;
} status_table[] = {
#define TACK__STATUS_ROW(e, name, msg, kind) {name, msg, kind},
    TACK_STATUS_LIST(TACK__STATUS_ROW)
#undef TACK__STATUS_ROW
};

static const char *const remedy_text[] = {
#define TACK__REMEDY_ROW(e, text) text,
    TACK_REMEDY_LIST(TACK__REMEDY_ROW)
#undef TACK__REMEDY_ROW
};

static int
status_valid(tack_status st)
{
    return (unsigned)st < (unsigned)TACK_STATUS_COUNT;
}

const char *
tack_status_name(tack_status st)
{
    return status_valid(st) ? status_table[st].name : "unknown";
}

const char *
tack_status_message(tack_status st)
{
    return status_valid(st) ? status_table[st].message : "unknown status";
}

tack_error_kind
tack_status_kind(tack_status st)
{
    return status_valid(st) ? status_table[st].kind : TACK_KIND_RUNTIME;
}

const char *
tack_last_error(void)
{
    return last_error;
}

const char *
tack_last_error_problem(void)
{
    return last_problem;
}

tack_remedy
tack_last_error_remedy(void)
{
    return last_remedy;
}

const char *
tack_last_error_origin(void)
{
    return last_origin;
}

void
tack_clear_error(void)
{
    last_error[0] = '\0';
    last_problem[0] = '\0';
    last_origin[0] = '\0';
    last_remedy = TACK_REMEDY_NONE;
}

/* The path from "csrc/" on: the build directory's relative prefix says nothing. */
static const char *
short_path(const char *file)
{
    const char *p = strstr(file, "csrc/");
    return p ? p : file;
}

tack_status
tack__fail_at(const char *file, int line, tack_status st, tack_remedy remedy,
              const char *fmt, ...)
{
    assert(st != TACK_OK && status_valid(st));
    assert((unsigned)remedy < (unsigned)TACK_REMEDY_COUNT);
    va_list ap;
    va_start(ap, fmt);
    /* The analyzer does not follow va_start through the format attribute. */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    int n = vsnprintf(last_problem, sizeof last_problem, fmt, ap);
    va_end(ap);
    if (n < 0) {
        /* Formatting failed: the generic message still says what kind of failure. */
        snprintf(last_problem, sizeof last_problem, "%s", tack_status_message(st));
    }
    last_remedy = remedy;
    last_origin[0] = '\0';
    if (file) {
        snprintf(last_origin, sizeof last_origin, "%s:%d", short_path(file), line);
    }
    /* A message longer than the buffer is cut, never overrun. */
    if (snprintf(last_error, sizeof last_error, "%s%s%s%s%s%s", last_problem,
                 remedy != TACK_REMEDY_NONE ? ": " : "", remedy_text[remedy],
                 file ? " [" : "", last_origin, file ? "]" : "") < 0) {
        last_error[0] = '\0';
    }
    return st;
}

tack_status
tack_set_error(tack_status st, const char *message)
{
    if (st == TACK_OK || !status_valid(st)) {
        st = TACK_ERR_INTERNAL;
        message = NULL;
    }
    /* No origin: the failure started in the caller, whose file means nothing here. */
    return tack__fail_at(NULL, 0, st, TACK_REMEDY_NONE, "%s",
                         message ? message : tack_status_message(st));
}

tack_status
tack__null_argument(const char *file, int line, const char *function,
                    const char *argument)
{
    return tack__fail_at(file, line, TACK_ERR_INVALID_ARGUMENT, TACK_REMEDY_NONE,
                         "%s(): argument '%s' is NULL: pass a valid pointer", function,
                         argument);
}
