/*
 * status.c: status names and messages from the X-macro, and the thread-local
 * last-error message.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Long enough for a message that names a shape, a dtype and what to do instead. */
#define TACK__ERROR_CAP 1024

static _Thread_local char last_error[TACK__ERROR_CAP];

static const struct {
    const char *name;
    const char *message;
    tack_error_kind kind;
} status_table[] = {
#define TACK__STATUS_ROW(e, name, msg, kind) {name, msg, kind},
    TACK_STATUS_LIST(TACK__STATUS_ROW)
#undef TACK__STATUS_ROW
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

void
tack_clear_error(void)
{
    last_error[0] = '\0';
}

tack_status
tack__fail(tack_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* The analyzer does not follow va_start through the format attribute. */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n < 0) {
        /* Formatting failed: the generic message still says what kind of failure. */
        snprintf(last_error, sizeof last_error, "%s", tack_status_message(st));
    }
    return st;
}
