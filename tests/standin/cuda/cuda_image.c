/*
 * cuda_image.c: what the CUDA layer's cuModuleLoadData accepts, checked as far as the
 * stand-in can: PTX text (its `.version` must be one a CUDA 13.0 driver reads, at most
 * 9.0, and its `.target` an architecture a compute capability 9.0 device runs), or a
 * CUBIN (a 64-bit ELF for EM_CUDA built for sm_90); and each entry's parameter layout,
 * read from the image (PTX `.param` declarations, or the CUBIN's .nv.info.<entry>
 * section). Fat binaries are refused with CUDA_ERROR_NOT_SUPPORTED: the stand-in does
 * not unpack them.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_layer.h"

#define STANDIN_PTX_MAX_MAJOR 9 /* PTX ISA 9.0 comes with CUDA 13.0 */
#define STANDIN_PTX_MAX_MINOR 0
#define STANDIN_SM 90
#define EM_CUDA 190

/* ---- reading images -------------------------------------------------------------- */

static uint64_t
read_le(const unsigned char *p, unsigned nbytes)
{
    uint64_t v = 0;
    for (unsigned k = nbytes; k-- > 0;) {
        v = (v << 8) | p[k];
    }
    return v;
}

/* The PTX text with comments blanked, or NULL. Owned by the caller. */
static char *
ptx_without_comments(const char *text, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) {
        return NULL;
    }
    memcpy(s, text, n);
    s[n] = '\0';
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') {
                *p++ = ' ';
            }
            if (!*p) {
                break;
            }
        }
        else if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(stop - p));
            p = stop - 1;
        }
    }
    return s;
}

/* Reads the decimal number at p, after blanks. Returns the end, or NULL. */
static const char *
read_number(const char *p, long *out)
{
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    if (!isdigit((unsigned char)*p)) {
        return NULL;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno != 0) {
        return NULL;
    }
    *out = v;
    return end;
}

/* Copies the next token of p (up to a blank, ',' or ')') into word. Returns the end of
 * the token, or NULL at the end of the list. */
static const char *
read_token(const char *p, const char *stop, char *word, size_t word_nbytes)
{
    while (p < stop && isspace((unsigned char)*p)) {
        p++;
    }
    size_t n = 0;
    while (p < stop && !isspace((unsigned char)*p) && *p != ',' && *p != ')') {
        if (n + 1 < word_nbytes) {
            word[n++] = *p;
        }
        p++;
    }
    word[n] = '\0';
    return n ? p : NULL;
}

static standin_rc
check_ptx(const char *text)
{
    const char *v = strstr(text, ".version");
    long major = 0, minor = 0;
    const char *p = v ? read_number(v + strlen(".version"), &major) : NULL;
    if (!p || *p != '.' || !read_number(p + 1, &minor)) {
        return TCU_ERROR_INVALID_PTX;
    }
    if (major > STANDIN_PTX_MAX_MAJOR ||
        (major == STANDIN_PTX_MAX_MAJOR && minor > STANDIN_PTX_MAX_MINOR)) {
        return TCU_ERROR_UNSUPPORTED_PTX_VERSION; /* newer than this driver reads */
    }
    const char *t = strstr(text, ".target");
    long sm = 0;
    if (t) {
        t += strlen(".target");
        while (*t == ' ' || *t == '\t') {
            t++;
        }
    }
    if (!t || strncmp(t, "sm_", 3) != 0 || !read_number(t + 3, &sm)) {
        return TCU_ERROR_INVALID_PTX;
    }
    /* PTX for an older architecture is compiled up; a newer one cannot run here
     * (as documented, unverified on hardware: the driver's code for this case). */
    return sm <= STANDIN_SM ? STANDIN_OK : TCU_ERROR_INVALID_PTX;
}

/* A CUBIN's section header table entry k: name offset, file offset and size. */
typedef struct section {
    uint32_t name;
    uint64_t offset, size;
} section;

static bool
cubin_section(const unsigned char *img, size_t n, unsigned k, section *out)
{
    uint64_t shoff = read_le(img + 0x28, 8);
    unsigned shentsize = (unsigned)read_le(img + 0x3A, 2);
    uint64_t at = shoff + (uint64_t)k * shentsize;
    if (shentsize < 0x40 || at > n || n - at < 0x40) {
        return false;
    }
    out->name = (uint32_t)read_le(img + at, 4);
    out->offset = read_le(img + at + 0x18, 8);
    out->size = read_le(img + at + 0x20, 8);
    return out->offset <= n && out->size <= n - out->offset;
}

/* Finds section `name` in a checked CUBIN. */
static bool
cubin_find(const unsigned char *img, size_t n, const char *name, section *out)
{
    unsigned shnum = (unsigned)read_le(img + 0x3C, 2);
    unsigned shstrndx = (unsigned)read_le(img + 0x3E, 2);
    section strings;
    if (shstrndx >= shnum || !cubin_section(img, n, shstrndx, &strings)) {
        return false;
    }
    size_t len = strlen(name);
    for (unsigned k = 0; k < shnum; k++) {
        section s;
        if (cubin_section(img, n, k, &s) && s.name < strings.size &&
            strings.size - s.name > len &&
            memcmp(img + strings.offset + s.name, name, len + 1) == 0) {
            *out = s;
            return true;
        }
    }
    return false;
}

static standin_rc
check_cubin(const unsigned char *img, size_t n)
{
    if (n < 0x40 || img[4] != 2 /* ELFCLASS64 */ || img[5] != 1 /* little-endian */ ||
        read_le(img + 0x12, 2) != EM_CUDA) {
        return TCU_ERROR_INVALID_IMAGE;
    }
    uint32_t flags = (uint32_t)read_le(img + 0x30, 4);
    unsigned abi = img[8];
    /* ELF ABI version 8 (CUDA 12.8 on) keeps the SM in bits 8-15, older ones in 0-7. */
    unsigned sm = abi >= 8 ? (flags >> 8) & 0xFF : flags & 0xFF;
    /* A CUBIN runs on its own major architecture, at its minor or a newer one. */
    if (sm / 10 != STANDIN_SM / 10 || sm > STANDIN_SM) {
        return TCU_ERROR_NO_BINARY_FOR_GPU;
    }
    return STANDIN_OK;
}

/* The size, in bytes, of a PTX parameter type such as .u64, .b8 or .f32. */
static size_t
ptx_type_size(const char *type)
{
    long bits = 0;
    if (type[0] == '.' && type[1] && strchr("subf", type[1]) &&
        read_number(type + 2, &bits) && bits % 8 == 0 && bits > 0) {
        return (size_t)bits / 8;
    }
    if (strncmp(type, ".pred", 5) == 0) {
        return 1;
    }
    return 0;
}

/* Reads the `.param` list of `.entry name(...)` into f. */
static standin_rc
ptx_params(const char *text, struct standin_function *f)
{
    size_t len = strlen(f->name);
    const char *p = text;
    while ((p = strstr(p, ".entry")) != NULL) {
        p += 6;
        while (isspace((unsigned char)*p)) {
            p++;
        }
        if (strncmp(p, f->name, len) == 0 &&
            (p[len] == '(' || isspace((unsigned char)p[len]))) {
            break;
        }
    }
    if (!p) {
        return STANDIN_ERR_NOT_FOUND;
    }
    const char *open = strchr(p, '('), *close = open ? strchr(open, ')') : NULL;
    const char *body = strchr(p, '{');
    if (!open || !close || (body && body < open)) {
        return STANDIN_OK; /* no parameter list */
    }
    size_t at = 0;
    for (const char *q = open; (q = strstr(q, ".param")) && q < close; q += 6) {
        size_t align = 0, elem = 0, count = 1;
        const char *r = q + 6;
        char word[64];
        const char *next = NULL;
        while ((next = read_token(r, close, word, sizeof word)) != NULL) {
            r = next;
            long a = 0;
            const char *after = strcmp(word, ".align") == 0 ? read_number(r, &a) : NULL;
            if (after && a > 0) {
                align = (size_t)a;
                r = after;
            }
            else if (word[0] == '.' && !elem) {
                elem = ptx_type_size(word);
            }
            else if (word[0] != '.') {
                const char *bracket = strchr(word, '[');
                if (bracket) {
                    count = (size_t)strtoull(bracket + 1, NULL, 10);
                }
                break; /* the name ends the declaration */
            }
        }
        if (!elem || f->nparams == STANDIN_MAX_PARAMS) {
            return TCU_ERROR_INVALID_PTX;
        }
        align = align ? align : elem;
        at = (at + align - 1) / align * align;
        f->offset[f->nparams] = at;
        f->size[f->nparams] = elem * count;
        at += elem * count;
        f->nparams++;
    }
    f->params_nbytes = at;
    return STANDIN_OK;
}

/* Reads EIATTR_KPARAM_INFO (0x17) records of .nv.info.<name>: one per parameter, with
 * its ordinal, offset and size; EIATTR_CBANK_PARAM_SIZE (0x19) gives the total. */
static standin_rc
cubin_params(const unsigned char *img, size_t n, struct standin_function *f)
{
    char name[512];
    section s;
    if ((size_t)snprintf(name, sizeof name, ".text.%s", f->name) >= sizeof name ||
        !cubin_find(img, n, name, &s)) {
        return STANDIN_ERR_NOT_FOUND;
    }
    snprintf(name, sizeof name, ".nv.info.%s", f->name);
    if (!cubin_find(img, n, name, &s)) {
        return STANDIN_OK; /* a kernel without parameters */
    }
    const unsigned char *p = img + s.offset, *end = p + s.size;
    while (end - p >= 4) {
        unsigned format = p[0], attr = p[1];
        size_t value = (size_t)read_le(p + 2, 2);
        size_t record = format == 4 ? 4 + value : 4;
        if ((size_t)(end - p) < record) {
            return TCU_ERROR_INVALID_IMAGE;
        }
        if (format == 4 && attr == 0x17 && value >= 12) {
            unsigned ordinal = (unsigned)read_le(p + 8, 2);
            size_t offset = (size_t)read_le(p + 10, 2);
            size_t size = (size_t)(read_le(p + 12, 4) >> 18) & 0x3FFF;
            if (ordinal >= STANDIN_MAX_PARAMS) {
                return TCU_ERROR_INVALID_IMAGE;
            }
            f->offset[ordinal] = offset;
            f->size[ordinal] = size;
            f->nparams = ordinal + 1 > f->nparams ? ordinal + 1 : f->nparams;
        }
        else if (format == 3 && attr == 0x19) {
            f->params_nbytes = value;
        }
        p += record;
    }
    return STANDIN_OK;
}

/* ---- what the entry points ask --------------------------------------------------- */

standin_rc
cuda_image_check(const unsigned char *img, size_t *nbytes, int *format)
{
    bool cubin = img[0] == 0x7F && img[1] == 'E' && img[2] == 'L' && img[3] == 'F';
    if (read_le(img, 4) == 0xBA55ED50u) {
        return STANDIN_ERR_NOT_SUPPORTED; /* a fat binary */
    }
    size_t n = 0;
    standin_rc rc;
    if (cubin) {
        /* An ELF image carries its size in its headers: the section table ends it. */
        uint64_t shoff = read_le(img + 0x28, 8);
        n = (size_t)(shoff + read_le(img + 0x3C, 2) * read_le(img + 0x3A, 2));
        rc = check_cubin(img, n);
    }
    else {
        n = strlen((const char *)img) + 1;
        char *text = ptx_without_comments((const char *)img, n - 1);
        rc = text ? check_ptx(text) : STANDIN_ERR_OUT_OF_MEMORY;
        free(text);
    }
    if (rc == STANDIN_OK) {
        *nbytes = n;
        *format = cubin ? CUDA_IMAGE_CUBIN : CUDA_IMAGE_PTX;
    }
    return rc;
}

standin_rc
cuda_image_params(const struct standin_module *m, struct standin_function *f)
{
    if (m->format == CUDA_IMAGE_CUBIN) {
        return cubin_params(m->image, m->image_nbytes, f);
    }
    char *text = ptx_without_comments((const char *)m->image, m->image_nbytes - 1);
    standin_rc rc = text ? ptx_params(text, f) : STANDIN_ERR_OUT_OF_MEMORY;
    free(text);
    return rc;
}
