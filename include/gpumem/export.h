/**
 * @file gpumem/export.h
 * @brief The one export macro of the public headers.
 *
 * Every public function is declared with GPUMEM_API.  The library is built
 * with -fvisibility=hidden, so only what carries this macro is exported; the
 * ELF version script then gives each exported name its version node.
 */
#ifndef GPUMEM_EXPORT_H
#define GPUMEM_EXPORT_H

#if defined(GPUMEM_BUILDING) && defined(__GNUC__) && __GNUC__ >= 4
#  define GPUMEM_API __attribute__((visibility("default")))
#else
#  define GPUMEM_API
#endif

#ifdef __cplusplus
#  define GPUMEM_BEGIN_DECLS extern "C" {
#  define GPUMEM_END_DECLS }
#else
#  define GPUMEM_BEGIN_DECLS
#  define GPUMEM_END_DECLS
#endif

#endif /* GPUMEM_EXPORT_H */
