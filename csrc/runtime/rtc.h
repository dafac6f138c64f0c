/*
 * rtc.h: a GPU kernel's source -> a loadable image, through a vendor's runtime
 * compiler, loaded with dlopen at its first use and never linked. One layer for every
 * compiler of the NVRTC family: NVRTC today; HIPRTC mirrors its C API call for call,
 * so a second compiler is one more name table in rtc.c (its entry points, where its
 * library lives, how it spells an architecture), not a second file.
 *
 * Architectures are strings, as each compiler spells them: NVRTC's binaries are
 * "sm_XY" (a CUBIN for exactly compute capability X.Y) and its portable code
 * "compute_XY" (PTX, which the driver finishes for newer GPUs); HIPRTC's would be
 * "gfx90a". For NVRTC, $TACK_NVRTC names the library when set (and then only it is
 * tried); otherwise libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so on the loader's
 * path, then the toolkit's lib64 under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
 * Every NVRTC compile uses --fmad=false (no multiply-add contraction, so float + - *
 * / round as the CPU build's do) and -default-device (every function of the source
 * is device code).
 *
 * Results go to the same disk cache as CPU kernels (kernel_cache.c: a private 0700
 * directory, entries published atomically, an entry that fails its checks rebuilt),
 * keyed by the compiler, its version, the target, the options and the source.
 *
 * Not installed and not part of Tack's public API: the GPU layer compiles through it
 * (csrc/backends/gpu/gpu_module_cache.c), and the functions are exported only for
 * the binding's private helpers (nvrtc_py.c) and the tests.
 */
#ifndef TACK_RTC_H
#define TACK_RTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime compilers Tack knows, one name table each (rtc.c). */
typedef enum tack_rtc_kind { TACK_RTC_NVRTC = 0, TACK_RTC_COUNT } tack_rtc_kind;

/* The longest architecture string a compiler spells, with its NUL byte. */
#define TACK_RTC_ARCH_CAP 32

/*
 * Loads the compiler if needed. Out: *major, *minor (its version), set only on
 * success. TACK_ERR_DEVICE_UNAVAILABLE when no library can be loaded (the message
 * names what was tried); TACK_ERR_INVALID_ARGUMENT for an unknown rtc or NULL output.
 */
TACK_API tack_status tack_rtc_version(tack_rtc_kind rtc, int *major, int *minor);

/*
 * Whether the compiler makes code for the architecture arch ("sm_90": a binary for
 * exactly it; "compute_90": portable code for it). Out: *yes, set only on success.
 * An architecture the compiler does not spell is TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_rtc_supports(tack_rtc_kind rtc, const char *arch, int *yes);

/*
 * What to build for a GPU whose own architecture is device_arch (NVRTC: "sm_XY"): a
 * binary for exactly it when the compiler can make one; otherwise portable code for
 * the highest architecture it supports below ("compute_XY"). Out: target (cap bytes,
 * at least TACK_RTC_ARCH_CAP), set only on success. TACK_ERR_DEVICE_UNAVAILABLE
 * when the compiler supports nothing at or below device_arch (a GPU older than it:
 * for NVRTC, an older CUDA toolkit's through TACK_NVRTC).
 */
TACK_API tack_status tack_rtc_choose(tack_rtc_kind rtc, const char *device_arch,
                                     char *target, size_t cap);

/*
 * Whether target is portable code (NVRTC's PTX) rather than a binary for one
 * architecture: a driver may refuse portable code of a newer compiler. False for a
 * target the compiler does not spell.
 */
TACK_API bool tack_rtc_is_portable(tack_rtc_kind rtc, const char *target);

/*
 * Compiles source (a whole translation unit; name appears in messages) for target
 * (as tack_rtc_choose gives it). Out: *image (Owned: release with tack_rtc_free())
 * and *nbytes, set only on success; portable code ends with its terminator, included
 * in *nbytes. On TACK_ERR_COMPILE, *log receives the compiler's log (the errors
 * point at the file and line of the source's #line directives; release with
 * tack_rtc_free()); on other errors *log is NULL. A failed compile is never cached.
 */
TACK_API tack_status tack_rtc_compile(tack_rtc_kind rtc, const char *source,
                                      const char *name, const char *target,
                                      void **image, size_t *nbytes, char **log);
TACK_API void tack_rtc_free(void *p);

/* Counters for tests (per compiler, process-wide, since start). */
typedef struct tack_rtc_stats {
    uint64_t compiles;  /* runs of the compiler that succeeded */
    uint64_t disk_hits; /* images read from the disk cache */
    uint64_t rebuilds;  /* cache entries ignored as corrupt or foreign */
    uint64_t failures;  /* failed compiles */
} tack_rtc_stats;
TACK_API void tack_rtc_get_stats(tack_rtc_kind rtc, tack_rtc_stats *out);

/*
 * The same disk cache for an image a program outside the runtime compilers made (a
 * Level Zero kernel's SPIR-V, from clang and llvm-spirv: tack.kernel.spirv). text is
 * everything that made the image (the tools' identities, their flags, the source): it
 * keys the entry and is stored whole in it, so an entry is used only for this exact
 * text. ext is the entry's file ending (".spv": a dot and up to 15 letters or digits).
 * get: true with *image (Owned: tack_rtc_free) and *nbytes when a sound entry is
 * there; false (nothing set) when there is none, it fails its checks, or there is no
 * usable cache folder. put: publishes nbytes (at least 1) at image; a failure only
 * loses the entry.
 */
TACK_API bool tack_rtc_cache_get(const char *ext, const char *text, void **image,
                                 size_t *nbytes);
TACK_API void tack_rtc_cache_put(const char *ext, const char *text, const void *image,
                                 size_t nbytes);

#ifdef __cplusplus
}
#endif

#endif /* TACK_RTC_H */
