/*
 * stream_cpu.h: tk_stream_line(dst, src) writes the 64 bytes at src to the
 * 64-byte-aligned dst with non-temporal stores: past the cache, without first
 * reading the line (stream.py says which loops use it and when).
 * tk_stream_fence() orders those stores before any later store; a chunk ends with
 * it (the thread pool's join, a locked instruction, orders them as well).
 *
 * With Clang, __builtin_nontemporal_store of a 64-byte vector, split by the
 * backend into what the target has. With GCC, the widest MOVNTDQ the target has.
 * Elsewhere (not x86-64), TK_STREAMS is 0: the emitted test that chooses the
 * streamed loop is false at compile time and the loop is plain.
 */
#if defined(__x86_64__) && defined(__SSE2__)
#define TK_STREAMS 1
typedef long long tk_line_v __attribute__((vector_size(64)));
TK_INLINE void
tk_stream_line(void *dst, const void *src)
{
#if defined(__clang__)
    tk_line_v v;
    __builtin_memcpy(&v, src, sizeof v);
    __builtin_nontemporal_store(v, (tk_line_v *)dst);
#elif defined(__AVX512F__)
    tk_line_v v;
    __builtin_memcpy(&v, src, sizeof v);
    __builtin_ia32_movntdq512((tk_line_v *)dst, v);
#elif defined(__AVX__)
    typedef long long tk_half_v __attribute__((vector_size(32)));
    tk_half_v v[2];
    __builtin_memcpy(v, src, sizeof v);
    __builtin_ia32_movntdq256((tk_half_v *)dst, v[0]);
    __builtin_ia32_movntdq256((tk_half_v *)dst + 1, v[1]);
#else
    typedef long long tk_quarter_v __attribute__((vector_size(16)));
    tk_quarter_v v[4];
    __builtin_memcpy(v, src, sizeof v);
    for (int i = 0; i < 4; i++)
        __builtin_ia32_movntdq((tk_quarter_v *)dst + i, v[i]);
#endif
}
#define tk_stream_fence() __builtin_ia32_sfence()
#else
#define TK_STREAMS 0
TK_INLINE void
tk_stream_line(void *dst, const void *src)
{
    __builtin_memcpy(dst, src, 64);
}
#define tk_stream_fence() ((void)0)
#endif
