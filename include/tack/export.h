/*
 * export.h: symbol visibility. The library is built with -fvisibility=hidden, so only
 * functions marked TACK_API are part of the shared object's interface.
 */
#ifndef TACK_EXPORT_H
#define TACK_EXPORT_H

#if defined(_WIN32)
#define TACK_API __declspec(dllexport)
#elif defined(__GNUC__)
#define TACK_API __attribute__((visibility("default")))
#else
#define TACK_API
#endif

#endif /* TACK_EXPORT_H */
