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
 * extension expands TACK_ERROR_KIND_LIST into one exception class per kind, named
 * as given, deriving from tack.TackError and from the builtins named in the last two
 * columns (docs/errors.md lists them; DLPack refusals are also BufferErrors). The
 * builtins are names, not C symbols: a C host reads them as documentation, and the
 * DLPack exchange API reports them as its error kinds.
 *
 * X(enum, class name, first builtin, second builtin or None, description)
 */
#define TACK_ERROR_KIND_LIST(X)                                                        \
    X(TACK_KIND_NONE, NULL, None, None, "success")                                     \
    X(TACK_KIND_VALUE, "TackValueError", ValueError, None,                             \
      "A bad value: shape, option, layout.")                                           \
    X(TACK_KIND_TYPE, "TackTypeError", TypeError, None,                                \
      "A bad type: dtype or argument kind.")                                           \
    X(TACK_KIND_INDEX, "TackIndexError", IndexError, None,                             \
      "An index outside an array.")                                                    \
    X(TACK_KIND_OVERFLOW, "TackOverflowError", OverflowError, None,                    \
      "A value that does not fit its dtype.")                                          \
    X(TACK_KIND_MEMORY, "TackMemoryError", MemoryError, None, "An allocation failed.") \
    X(TACK_KIND_RUNTIME, "TackRuntimeError", RuntimeError, None,                       \
      "A state or environment problem.")                                               \
    X(TACK_KIND_READ_ONLY, "ReadOnlyError", RuntimeError, None,                        \
      "A host write to a non-writable array.")                                         \
    X(TACK_KIND_DEVICE, "DeviceUnavailableError", RuntimeError, None,                  \
      "A device or its driver is missing.")                                            \
    X(TACK_KIND_BUFFER, "DLPackExportError", BufferError, None,                        \
      "A DLPack export was refused.")                                                  \
    X(TACK_KIND_DLPACK_VALUE, "DLPackError", ValueError, BufferError,                  \
      "A DLPack tensor was refused.")                                                  \
    X(TACK_KIND_DLPACK_TYPE, "DLPackTypeError", TypeError, BufferError,                \
      "A DLPack dtype was refused.")                                                   \
    X(TACK_KIND_DLPACK_DEVICE, "DLPackDeviceError", RuntimeError, BufferError,         \
      "A DLPack tensor is on a device the importing device cannot wrap.")              \
    X(TACK_KIND_ZERO_DIVISION, "TackZeroDivisionError", ZeroDivisionError, None,       \
      "Integer division by zero.")                                                     \
    X(TACK_KIND_COMPILE, "CompileError", RuntimeError, None,                           \
      "A kernel failed to compile.")

typedef enum tack_error_kind {
#define TACK__KIND_ENUM(e, cls, base, base2, doc) e,
    TACK_ERROR_KIND_LIST(TACK__KIND_ENUM)
#undef TACK__KIND_ENUM
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
    X(TACK_ERR_INTERNAL, "internal", "internal error", TACK_KIND_RUNTIME)             \
    X(TACK_ERR_IN_USE, "in_use", "memory is still in use", TACK_KIND_RUNTIME)         \
    X(TACK_ERR_RECLAIMED, "reclaimed", "memory was reclaimed by its owner",           \
      TACK_KIND_VALUE)

typedef enum tack_status {
#define TACK__STATUS_ENUM(e, name, msg, kind) e,
    TACK_STATUS_LIST(TACK__STATUS_ENUM)
#undef TACK__STATUS_ENUM
        TACK_STATUS_COUNT
} tack_status;

/*
 * Remedies: what a caller can do about a failure, recorded beside the message so each
 * caller can say it in its own terms. tack_last_error() ends with the remedy in C
 * terms (the second column); a binding takes the problem alone
 * (tack_last_error_problem()) and words the remedy for its own users.
 *
 * X(enum, the remedy in C terms)
 */
#define TACK_REMEDY_LIST(X)                                             \
    X(TACK_REMEDY_NONE, "")                                             \
    X(TACK_REMEDY_COPY,                                                 \
      "request a copy (TACK_DLPACK_COPY_ALWAYS in the import "          \
      "options, copy = true in the export options)")                    \
    X(TACK_REMEDY_VERSIONED,                                            \
      "export a versioned tensor "                                      \
      "(tack_dlpack_export_versioned), or a copy (copy = true "         \
      "in the export options)")                                         \
    X(TACK_REMEDY_WRITABLE_COPY,                                        \
      "copy it into a new array (tack_array_empty, then "               \
      "tack_array_copyto) to get a writable one")                       \
    X(TACK_REMEDY_HOST_COPY,                                            \
      "move the tensor to host memory, then import a copy "             \
      "(TACK_DLPACK_COPY_ALWAYS)")                                      \
    X(TACK_REMEDY_DLPACK_1, "ask the producer for a DLPack 1.x tensor") \
    X(TACK_REMEDY_CPU, "open the 'cpu' device instead")                 \
    X(TACK_REMEDY_NO_STREAM, "leave the stream unset, or pass -1")      \
    X(TACK_REMEDY_OWN_DEVICE,                                           \
      "request the array's own device, or the host "                    \
      "(kDLCPU, 0) with a copy")                                        \
    X(TACK_REMEDY_TO_CPU,                                               \
      "copy it to the CPU first (tack_array_to_device with a 'cpu' "    \
      "device)")

typedef enum tack_remedy {
#define TACK__REMEDY_ENUM(e, text) e,
    TACK_REMEDY_LIST(TACK__REMEDY_ENUM)
#undef TACK__REMEDY_ENUM
        TACK_REMEDY_COUNT
} tack_remedy;

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

/*
 * The parts of the last failure on this thread: the problem alone (what was wrong,
 * without the remedy), the remedy (TACK_REMEDY_NONE when the problem says it all),
 * and, in debug builds of the runtime, "file:line" where the failure started (empty
 * otherwise). Borrowed: valid until the next Tack call on this thread; never NULL.
 */
TACK_API const char *tack_last_error_problem(void);
TACK_API tack_remedy tack_last_error_remedy(void);
TACK_API const char *tack_last_error_origin(void);

/*
 * Records a failure found outside the runtime (by a binding or a host) as this
 * thread's last error, so that tack_last_error() tells it like the runtime's own:
 * message (copied; NULL takes the status's generic message) is the problem, without
 * a remedy. Returns st. A status that is not a failure (TACK_OK, out of range)
 * records TACK_ERR_INTERNAL's message instead and returns TACK_ERR_INTERNAL.
 */
TACK_API tack_status tack_set_error(tack_status st, const char *message);

/* Forget the last failure on this thread. */
TACK_API void tack_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TACK_STATUS_H */
