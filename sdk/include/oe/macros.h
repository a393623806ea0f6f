/* Calling convention, symbol export and C/C++ linkage for the oe plugin ABI. */
#ifndef OE_MACROS_H
#define OE_MACROS_H

#if defined(_WIN32)
#define OE_ABI __cdecl
#define OE_EXPORT __declspec(dllexport)
#else
#define OE_ABI
#define OE_EXPORT __attribute__((visibility("default")))
#endif

/* Marks a parameter a function may leave unused (OE_DECLARE_TOOL's call context). */
#if defined(__GNUC__) || defined(__clang__)
#define OE_MAYBE_UNUSED __attribute__((unused))
#else
#define OE_MAYBE_UNUSED
#endif

#ifdef __cplusplus
#define OE_EXTERN_C extern "C"
#define OE_BEGIN_DECLS extern "C" {
#define OE_END_DECLS }
#else
#define OE_EXTERN_C
#define OE_BEGIN_DECLS
#define OE_END_DECLS
#endif

#endif /* OE_MACROS_H */
