#ifndef MQ_DEFS_H
#define MQ_DEFS_H

/* Nullability annotations are clang's; other compilers (gcc for cross builds) ignore them. */
#if defined(__clang__)
#define MQ_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define MQ_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#else
#define MQ_ASSUME_NONNULL_BEGIN
#define MQ_ASSUME_NONNULL_END
#ifndef _Nonnull
#define _Nonnull
#endif
#ifndef _Nullable
#define _Nullable
#endif
#endif

#endif
