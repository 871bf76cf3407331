/*
 * pxl/export.h: PXL_API, the mark on every public function declaration.
 *
 * pxl is compiled with -fvisibility=hidden: in the shared library libpxl.so
 * only the functions declared PXL_API are exported; everything else (the
 * internal pxl_ functions shared between source files) stays inside. The
 * static library is unaffected. Included by pxl/core.h.
 */
#ifndef PXL_EXPORT_H
#define PXL_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define PXL_API __attribute__((visibility("default")))
#else
#define PXL_API
#endif

#endif
