/*
 * nvrtc.h: CUDA kernel source -> CUBIN or PTX, through NVIDIA's runtime compiler.
 *
 * NVRTC is loaded with dlopen at the first use, never linked: $TACK_NVRTC names the
 * library when set (and then only it is tried); otherwise libnvrtc.so.13,
 * libnvrtc.so.12 and libnvrtc.so on the loader's path, then the toolkit's
 * lib64 under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
 *
 * Every compile uses --fmad=false (no multiply-add contraction, so float + - * /
 * round as the CPU build's do) and -default-device (every function of the source
 * is device code). Results go to the same disk cache as CPU kernels (kernel_cache.c:
 * a private 0700 directory, entries published atomically, an entry that fails its
 * checks rebuilt), keyed by NVRTC's version, the architecture, the output kind, the
 * options and the source.
 */
#ifndef TACK_NVRTC_H
#define TACK_NVRTC_H

#include <stddef.h>
#include <stdint.h>

#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tack_nvrtc_output {
    TACK_NVRTC_CUBIN = 0, /* a binary for exactly one compute capability (sm_XY) */
    TACK_NVRTC_PTX = 1 /* PTX for compute_XY: the driver finishes it for newer GPUs */
} tack_nvrtc_output;

/*
 * Loads NVRTC if needed. Out: *major, *minor (its version), set only on success.
 * TACK_ERR_DEVICE_UNAVAILABLE when no library can be loaded (the message names what was
 * tried).
 */
TACK_API tack_status tack_nvrtc_version(int *major, int *minor);

/*
 * Whether this NVRTC can make a CUBIN for compute capability arch (10 * major +
 * minor, e.g. 90). A PTX for the highest supported architecture at or below arch is
 * the fallback when it cannot. Out: *yes, set only on success.
 */
TACK_API tack_status tack_nvrtc_supports(int arch, int *yes);

/*
 * What to build for a GPU of compute capability arch with this NVRTC: a CUBIN for
 * exactly arch when NVRTC can make one; otherwise PTX for the highest architecture
 * it supports below arch (the driver finishes PTX for newer GPUs). Out: *kind and
 * *target (the architecture to pass to tack_nvrtc_compile), set only on success.
 * TACK_ERR_DEVICE_UNAVAILABLE when NVRTC supports nothing at or below arch (a GPU
 * older than this NVRTC: use an older CUDA toolkit's NVRTC through TACK_NVRTC).
 */
TACK_API tack_status tack_nvrtc_choose(int arch, tack_nvrtc_output *kind, int *target);

/*
 * Compiles source (a whole translation unit; name appears in messages) for arch.
 * Out: *image (Owned: release with tack_nvrtc_free()) and *nbytes, set only on
 * success; a PTX image ends with its terminator, included in *nbytes.
 * On TACK_ERR_COMPILE, *log receives NVRTC's log (the errors point at the file and
 * line of the source's #line directives; release with tack_nvrtc_free()); on other
 * errors *log is NULL. A failed compile is never cached.
 */
TACK_API tack_status tack_nvrtc_compile(const char *source, const char *name, int arch,
                                        tack_nvrtc_output kind, void **image,
                                        size_t *nbytes, char **log);
TACK_API void tack_nvrtc_free(void *p);

/* Counters for tests (process-wide, since start). */
typedef struct tack_nvrtc_stats {
    uint64_t compiles;  /* runs of NVRTC that succeeded */
    uint64_t disk_hits; /* images read from the disk cache */
    uint64_t rebuilds;  /* cache entries ignored as corrupt or foreign */
    uint64_t failures;  /* failed compiles */
} tack_nvrtc_stats;
TACK_API void tack_nvrtc_get_stats(tack_nvrtc_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TACK_NVRTC_H */
