/*
 * standin_ze_opencl.c: launches that execute the module's SPIR-V on an OpenCL device
 * (Intel's OpenCL CPU runtime in the tests), loaded at run time with dlopen, so the
 * stand-in builds and runs where no OpenCL is installed.
 *
 * $TACK_STANDIN_ZE_EXECUTE: "twin" (launches are computed by CPU twins only),
 * "spirv" (by OpenCL only: a launch that cannot run there is refused), unset: SPIR-V
 * when OpenCL loads ($TACK_STANDIN_ZE_OPENCL, default libOpenCL.so.1) and offers a
 * device with cl_khr_il_program and cl_intel_unified_shared_memory, else twins. The
 * choice, and why OpenCL could not be used, is printed once as "standin-ze: note:"
 * (not a complaint: it goes to no log).
 *
 * Strictness: device memory stays PROT_NONE to the host; while a launch runs, the
 * application views of the live device allocations of its list's context and device
 * (and no others) are opened, and the kernel gets the application's addresses: a
 * kernel that touches another context's memory, freed memory or memory past the
 * page of an allocation faults (the process ends with SIGSEGV).
 */
#define _GNU_SOURCE /* dlopen's RTLD_ flags with c11 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "standin_ze.h"

typedef int32_t cl_int;
typedef void *cl_h;
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_DEVICE_EXTENSIONS 0x1030u
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004u
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023u
#define CL_PROGRAM_BUILD_LOG 0x1183u

/* The OpenCL calls the stand-in makes, resolved from the ICD loader. */
#define CL_CALLS(X)                                                                    \
    X(cl_int, clGetPlatformIDs, (uint32_t, cl_h *, uint32_t *))                        \
    X(cl_int, clGetDeviceIDs, (cl_h, uint64_t, uint32_t, cl_h *, uint32_t *))          \
    X(cl_int, clGetDeviceInfo, (cl_h, uint32_t, size_t, void *, size_t *))             \
    X(cl_h, clCreateContext,                                                           \
      (const intptr_t *, uint32_t, const cl_h *, void *, void *, cl_int *))            \
    X(cl_h, clCreateCommandQueueWithProperties,                                        \
      (cl_h, cl_h, const uint64_t *, cl_int *))                                        \
    X(cl_h, clCreateProgramWithIL, (cl_h, const void *, size_t, cl_int *))             \
    X(cl_int, clBuildProgram,                                                          \
      (cl_h, uint32_t, const cl_h *, const char *, void *, void *))                    \
    X(cl_int, clGetProgramBuildInfo, (cl_h, cl_h, uint32_t, size_t, void *, size_t *)) \
    X(cl_h, clCreateKernel, (cl_h, const char *, cl_int *))                            \
    X(cl_int, clSetKernelArg, (cl_h, uint32_t, size_t, const void *))                  \
    X(cl_int, clEnqueueNDRangeKernel,                                                  \
      (cl_h, cl_h, uint32_t, const size_t *, const size_t *, const size_t *, uint32_t, \
       const cl_h *, cl_h *))                                                          \
    X(cl_int, clFinish, (cl_h))                                                        \
    X(cl_int, clReleaseKernel, (cl_h))                                                 \
    X(cl_int, clReleaseProgram, (cl_h))                                                \
    X(void *, clGetExtensionFunctionAddressForPlatform, (cl_h, const char *))

/* NOLINTNEXTLINE(bugprone-macro-parentheses): a declarator, not an expression */
#define CL_DECLARE(ret, name, args) ret(*name) args;
static struct {
    CL_CALLS(CL_DECLARE)
    cl_int (*clSetKernelArgMemPointerINTEL)(cl_h, uint32_t, const void *);
} cl;

static int decided;       /* 0: not yet; 1: SPIR-V; 2: twins */
static char refusal[256]; /* why OpenCL is not used ("" when it is) */
static cl_h cl_device, cl_context, cl_queue;
static uint64_t cl_local_nbytes;   /* the device's local memory of one work-group */
static size_t cl_max_group;        /* and its work items */
static uint64_t by_spirv, by_twin; /* launches run, for tests */

STANDIN_EXPORT void tack_standin_ze_executed(uint64_t *spirv, uint64_t *twin);

void
tack_standin_ze_executed(uint64_t *spirv, uint64_t *twin)
{
    pthread_mutex_lock(&standin_lock);
    *spirv = by_spirv;
    *twin = by_twin;
    pthread_mutex_unlock(&standin_lock);
}

void
standin_count_twin(void)
{
    by_twin++;
}

/* Whether the space-separated list has word. */
static bool
has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word)) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

/* Loads OpenCL and finds a device that executes SPIR-V with USM pointers; else the
 * reason in refusal. */
static bool
open_opencl(void)
{
    const char *path = getenv("TACK_STANDIN_ZE_OPENCL");
    void *lib = dlopen(path && *path ? path : "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(refusal, sizeof refusal, "no OpenCL loader (%s)", dlerror());
        return false;
    }
    void *sym;
#define CL_RESOLVE(ret, name, args)                                           \
    sym = dlsym(lib, #name);                                                  \
    memcpy(&cl.name, &sym, sizeof sym);                                       \
    if (!cl.name) {                                                           \
        snprintf(refusal, sizeof refusal, "the OpenCL loader has no " #name); \
        return false;                                                         \
    }
    CL_CALLS(CL_RESOLVE)
    cl_h platforms[8];
    uint32_t np = 0;
    if (cl.clGetPlatformIDs(8, platforms, &np) != 0 || np == 0) {
        snprintf(refusal, sizeof refusal, "OpenCL lists no platform");
        return false;
    }
    for (uint32_t p = 0; p < np && np <= 8; p++) {
        cl_h devices[8];
        uint32_t nd = 0;
        if (cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 8, devices, &nd) != 0) {
            continue;
        }
        for (uint32_t d = 0; d < nd && d < 8; d++) {
            static char ext[1 << 16];
            if (cl.clGetDeviceInfo(devices[d], CL_DEVICE_EXTENSIONS, sizeof ext, ext,
                                   NULL) != 0 ||
                !has_word(ext, "cl_khr_il_program") ||
                !has_word(ext, "cl_intel_unified_shared_memory")) {
                continue;
            }
            sym = cl.clGetExtensionFunctionAddressForPlatform(
                platforms[p], "clSetKernelArgMemPointerINTEL");
            memcpy(&cl.clSetKernelArgMemPointerINTEL, &sym, sizeof sym);
            cl_int made = 0, queued = -1;
            cl_h context = cl.clCreateContext(NULL, 1, &devices[d], NULL, NULL, &made);
            cl_h queue = made == 0 ? cl.clCreateCommandQueueWithProperties(
                                         context, devices[d], NULL, &queued)
                                   : NULL;
            cl_context = context;
            cl_queue = queue;
            if (made == 0 && queued == 0 && cl.clSetKernelArgMemPointerINTEL &&
                cl.clGetDeviceInfo(devices[d], CL_DEVICE_LOCAL_MEM_SIZE,
                                   sizeof cl_local_nbytes, &cl_local_nbytes,
                                   NULL) == 0 &&
                cl.clGetDeviceInfo(devices[d], CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                   sizeof cl_max_group, &cl_max_group, NULL) == 0) {
                cl_device = devices[d];
                return true;
            }
        }
    }
    snprintf(refusal, sizeof refusal,
             "no OpenCL device offers cl_khr_il_program and "
             "cl_intel_unified_shared_memory");
    return false;
}

bool
standin_cl_executes(void)
{
    if (!decided) {
        const char *want = getenv("TACK_STANDIN_ZE_EXECUTE");
        bool twin = want && strcmp(want, "twin") == 0;
        bool spirv = !twin && open_opencl();
        decided = spirv ? 1 : 2;
        if (twin) {
            snprintf(refusal, sizeof refusal, "TACK_STANDIN_ZE_EXECUTE=twin");
        }
        fprintf(stderr, "standin-ze: note: launches run %s%s%s\n",
                spirv ? "the module's SPIR-V on OpenCL" : "CPU twins",
                spirv ? "" : ": ", refusal);
    }
    return decided == 1;
}

void
standin_group_limits(uint32_t *max_group, uint32_t *local_nbytes)
{
    /* a real Intel GPU's (Xe: 1024 work items, 64 KiB of shared local memory) */
    *max_group = 1024;
    *local_nbytes = 65536;
    if (standin_cl_executes()) { /* what the OpenCL device will take */
        *max_group = cl_max_group < UINT32_MAX ? (uint32_t)cl_max_group : UINT32_MAX;
        *local_nbytes =
            cl_local_nbytes < UINT32_MAX ? (uint32_t)cl_local_nbytes : UINT32_MAX;
    }
    const char *told = getenv("TACK_STANDIN_ZE_LOCAL_MEMORY");
    if (told && *told) {
        *local_nbytes = (uint32_t)strtoul(told, NULL, 10);
    }
}

const char *
standin_cl_refusal(void)
{
    const char *want = getenv("TACK_STANDIN_ZE_EXECUTE");
    return want && strcmp(want, "spirv") == 0 && !standin_cl_executes() ? refusal
                                                                        : NULL;
}

ze_result_t
standin_cl_build(standin_module *m, char **log)
{
    cl_int rc = 0;
    cl_h program = cl.clCreateProgramWithIL(cl_context, m->words, 4 * m->nwords, &rc);
    if (rc == 0) {
        rc = cl.clBuildProgram(program, 1, &cl_device, "", NULL, NULL);
    }
    if (rc == 0) {
        m->cl_program = program;
        return ZE_RESULT_SUCCESS;
    }
    size_t n = 0;
    char *text = NULL;
    if (program &&
        cl.clGetProgramBuildInfo(program, cl_device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                 &n) == 0 &&
        (text = calloc(1, n + 1)) != NULL) {
        cl.clGetProgramBuildInfo(program, cl_device, CL_PROGRAM_BUILD_LOG, n, text,
                                 NULL);
    }
    if (program) {
        cl.clReleaseProgram(program);
    }
    if (!text && (text = malloc(64)) != NULL) {
        snprintf(text, 64, "clCreateProgramWithIL: OpenCL error %d", (int)rc);
    }
    *log = text;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

ze_result_t
standin_cl_kernel(standin_kernel *k, const char *call)
{
    cl_int rc = 0;
    k->cl_kernel = cl.clCreateKernel(k->module->cl_program, k->name, &rc);
    if (rc != 0) {
        k->cl_kernel = NULL;
        return standin_complain(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, call,
                                "OpenCL cannot make kernel '%s' (error %d)", k->name,
                                (int)rc);
    }
    return ZE_RESULT_SUCCESS;
}

void
standin_cl_release(void *program, void *kernel)
{
    if (kernel) {
        cl.clReleaseKernel(kernel);
    }
    if (program) {
        cl.clReleaseProgram(program);
    }
}

/* Sets argument i of the launch as its kind says. */
static cl_int
set_argument(const standin_launch *launch, uint32_t i)
{
    const unsigned char *bytes = launch->params + launch->arg_at[i];
    size_t n = launch->arg_nbytes[i];
    switch (launch->kernel->kinds[i]) {
    case STANDIN_ARG_LOCAL: return cl.clSetKernelArg(launch->cl_kernel, i, n, NULL);
    case STANDIN_ARG_GLOBAL: {
        void *p = NULL;
        if (!launch->arg_null[i]) {
            memcpy(&p, bytes, sizeof p);
        }
        return cl.clSetKernelArgMemPointerINTEL(launch->cl_kernel, i, p);
    }
    case STANDIN_ARG_VALUE: break;
    }
    return cl.clSetKernelArg(launch->cl_kernel, i, n, bytes);
}

ze_result_t
standin_cl_run(const standin_list *l, const standin_launch *launch)
{
    const char *call = "zeCommandQueueSynchronize";
    for (int i = 0; i < launch->nargs; i++) {
        cl_int rc = set_argument(launch, (uint32_t)i);
        if (rc != 0) {
            return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                    "OpenCL refuses argument %d of kernel '%s' "
                                    "(error %d)",
                                    i, launch->kernel->name, (int)rc);
        }
    }
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++) {
        global[d] = (size_t)launch->groups[d] * launch->group[d];
        local[d] = launch->group[d];
    }
    standin_views_protect(l, PROT_READ | PROT_WRITE);
    cl_int rc = cl.clEnqueueNDRangeKernel(cl_queue, launch->cl_kernel, 3, NULL, global,
                                          local, 0, NULL, NULL);
    cl_int done = rc == 0 ? cl.clFinish(cl_queue) : 0;
    standin_views_protect(l, PROT_NONE);
    if (rc != 0 || done != 0) {
        return standin_complain(ZE_RESULT_ERROR_DEVICE_LOST, call,
                                "OpenCL could not run kernel '%s' (error %d)",
                                launch->kernel->name, (int)(rc ? rc : done));
    }
    by_spirv++;
    return ZE_RESULT_SUCCESS;
}
