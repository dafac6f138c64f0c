/*
 * hash.c: the 128-bit non-cryptographic hash that names cache entries and checks
 * their objects (internal.h's tack__hash).
 *
 * Two FNV-1a lanes over the bytes, each with its own multiplier, finalised with a
 * 64-bit mixer into 32 hex digits. jit.c and rtc.c key their cache entries with it
 * and kernel_cache.c checks the cached objects with it. Speed matters, strength does
 * not: every entry also stores and compares the full source, so a collision can never
 * load the wrong kernel. The digits name files already on disk, so changing a
 * constant here leaves every existing entry unused (a rebuild, not a wrong load).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void
tack__hash_init(tack__hash *h)
{
    h->a = 0xcbf29ce484222325u;
    h->b = 0x6c62272e07bb0142u;
}

void
tack__hash_update(tack__hash *h, const void *data, size_t nbytes)
{
    const unsigned char *p = data;
    uint64_t a = h->a, b = h->b;
    for (size_t k = 0; k < nbytes; k++) {
        a = (a ^ p[k]) * 0x100000001b3u;
        b = (b ^ p[k]) * 0x9e3779b97f4a7c15u;
        b ^= b >> 29;
    }
    h->a = a;
    h->b = b;
}

void
tack__hash_str(tack__hash *h, const char *s)
{
    tack__hash_update(h, s, strlen(s) + 1);
}

static uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    x ^= x >> 31;
    return x;
}

void
tack__hash_hex(const tack__hash *h, char out[33])
{
    uint64_t a = mix64(h->a ^ mix64(h->b));
    uint64_t b = mix64(h->b ^ mix64(h->a + 0x9e3779b97f4a7c15u));
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}
