/*
 * status.h: the one table of Tack's status codes.
 *
 * Every fallible C function returns a tack_status. TACK_STATUS_LIST is an X-macro
 * with one row per status: its enum name, a short stable name, a generic message and
 * the error kind. The error kind decides which exception the Python extension raises
 * (it expands the same list), so adding a status is one row here and nothing else.
 * The details of a failure (which argument, which value, what to do instead) go to a
 * thread-local message read with tack_last_error().
 */
#ifndef TACK_STATUS_H
#define TACK_STATUS_H

#include <stddef.h>

#include "tack/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error kinds: the family of a failure, independent of where it happened. The Python
 * extension maps each kind to one exception class that derives from tack.TackError
 * and from the builtin that docs/errors.md lists for the kind.
 */
typedef enum tack_error_kind {
    TACK_KIND_NONE = 0,      /* success */
    TACK_KIND_VALUE,         /* ValueError: a bad value (shape, option, layout) */
    TACK_KIND_TYPE,          /* TypeError: a bad type (dtype, argument kind) */
    TACK_KIND_INDEX,         /* IndexError: an index outside an array */
    TACK_KIND_OVERFLOW,      /* OverflowError: a value does not fit its target */
    TACK_KIND_MEMORY,        /* MemoryError: an allocation failed */
    TACK_KIND_RUNTIME,       /* RuntimeError: a state or environment problem */
    TACK_KIND_READ_ONLY,     /* RuntimeError: a host write to a non-writable array */
    TACK_KIND_DEVICE,        /* RuntimeError: a device or driver is unavailable */
    TACK_KIND_BUFFER,        /* BufferError: a DLPack export refused */
    TACK_KIND_DLPACK_VALUE,  /* ValueError and BufferError: a DLPack import refused */
    TACK_KIND_DLPACK_TYPE,   /* TypeError and BufferError: a DLPack dtype refused */
    TACK_KIND_DLPACK_DEVICE, /* RuntimeError and BufferError: wrong importing device */
    TACK_KIND_ZERO_DIVISION, /* ZeroDivisionError: integer division by zero (debug) */
    TACK_KIND_COMPILE, /* tack.CompileError (RuntimeError): a kernel build failed */
    TACK_KIND_COUNT
} tack_error_kind;

/* X(enum, short name, generic message, error kind) */
#define TACK_STATUS_LIST(X)                                                           \
    X(TACK_OK, "ok", "success", TACK_KIND_NONE)                                       \
    X(TACK_ERR_NO_MEMORY, "no_memory", "out of memory", TACK_KIND_MEMORY)             \
    X(TACK_ERR_INVALID_ARGUMENT, "invalid_argument", "invalid argument",              \
      TACK_KIND_VALUE)                                                                \
    X(TACK_ERR_BAD_SHAPE, "bad_shape", "invalid shape", TACK_KIND_VALUE)              \
    X(TACK_ERR_SIZE_OVERFLOW, "size_overflow", "array size overflows",                \
      TACK_KIND_VALUE)                                                                \
    X(TACK_ERR_BAD_DTYPE, "bad_dtype", "unsupported dtype", TACK_KIND_TYPE)           \
    X(TACK_ERR_BAD_TYPE, "bad_type", "argument of the wrong type", TACK_KIND_TYPE)    \
    X(TACK_ERR_VALUE_OVERFLOW, "value_overflow", "value out of range for the dtype",  \
      TACK_KIND_OVERFLOW)                                                             \
    X(TACK_ERR_INDEX, "index", "index out of range", TACK_KIND_INDEX)                 \
    X(TACK_ERR_READ_ONLY, "read_only", "array is not writable", TACK_KIND_READ_ONLY)  \
    X(TACK_ERR_UNKNOWN_DEVICE, "unknown_device", "unknown device", TACK_KIND_VALUE)   \
    X(TACK_ERR_UNKNOWN_OPTION, "unknown_option", "unknown device option",             \
      TACK_KIND_VALUE)                                                                \
    X(TACK_ERR_DEVICE_UNAVAILABLE, "device_unavailable", "device is not available",   \
      TACK_KIND_DEVICE)                                                               \
    X(TACK_ERR_DEVICE_MISMATCH, "device_mismatch", "arrays are on different devices", \
      TACK_KIND_VALUE)                                                                \
    X(TACK_ERR_UNSUPPORTED, "unsupported", "operation not supported here",            \
      TACK_KIND_RUNTIME)                                                              \
    X(TACK_ERR_BACKEND, "backend", "backend call failed", TACK_KIND_RUNTIME)          \
    X(TACK_ERR_EXPORT_REFUSED, "export_refused", "DLPack export refused",             \
      TACK_KIND_BUFFER)                                                               \
    X(TACK_ERR_DLPACK_INVALID, "dlpack_invalid", "DLPack tensor refused",             \
      TACK_KIND_DLPACK_VALUE)                                                         \
    X(TACK_ERR_DLPACK_DTYPE, "dlpack_dtype", "DLPack dtype not supported",            \
      TACK_KIND_DLPACK_TYPE)                                                          \
    X(TACK_ERR_DLPACK_DEVICE, "dlpack_device",                                        \
      "DLPack tensor is on a device the importing device cannot wrap",                \
      TACK_KIND_DLPACK_DEVICE)                                                        \
    X(TACK_ERR_ZERO_DIVISION, "zero_division", "integer division by zero",            \
      TACK_KIND_ZERO_DIVISION)                                                        \
    X(TACK_ERR_COMPILE, "compile", "kernel compilation failed", TACK_KIND_COMPILE)    \
    X(TACK_ERR_INTERNAL, "internal", "internal error", TACK_KIND_RUNTIME)

typedef enum tack_status {
#define TACK__STATUS_ENUM(e, name, msg, kind) e,
    TACK_STATUS_LIST(TACK__STATUS_ENUM)
#undef TACK__STATUS_ENUM
        TACK_STATUS_COUNT
} tack_status;

/* The short stable name of a status ("no_memory"); "unknown" for a bad value. */
TACK_API const char *tack_status_name(tack_status st);

/* The generic message of a status; tack_last_error() has the specific one. */
TACK_API const char *tack_status_message(tack_status st);

/* The error kind of a status (TACK_KIND_NONE for TACK_OK). */
TACK_API tack_error_kind tack_status_kind(tack_status st);

/*
 * The message of the last failure on this thread. Borrowed: valid until the next
 * Tack call on this thread. Never NULL; empty when nothing failed yet.
 */
TACK_API const char *tack_last_error(void);

/* Forget the last failure on this thread. */
TACK_API void tack_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TACK_STATUS_H */
