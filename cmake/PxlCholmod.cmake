# SuiteSparse CHOLMOD (the ad layer's sparse Cholesky, src/ad/chol.c) as the
# imported target PxlDeps::CHOLMOD: its header directory (Debian:
# /usr/include/suitesparse) and libcholmod. Debian 12's libsuitesparse-dev
# ships neither a pkg-config file nor a CMake package for it, so the header
# and the library are looked up by name. Included by pxl's own build and by
# the installed pxlConfig.cmake (a consumer of the static library links
# libcholmod too). Sets PXL_CHOLMOD_FOUND.
if(TARGET PxlDeps::CHOLMOD)
  set(PXL_CHOLMOD_FOUND TRUE)
  return()
endif()
find_path(PXL_CHOLMOD_INCLUDE_DIR cholmod.h PATH_SUFFIXES suitesparse)
find_library(PXL_CHOLMOD_LIBRARY cholmod)
if(PXL_CHOLMOD_INCLUDE_DIR AND PXL_CHOLMOD_LIBRARY)
  add_library(PxlDeps::CHOLMOD UNKNOWN IMPORTED)
  set_target_properties(PxlDeps::CHOLMOD PROPERTIES IMPORTED_LOCATION "${PXL_CHOLMOD_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PXL_CHOLMOD_INCLUDE_DIR}")
  set(PXL_CHOLMOD_FOUND TRUE)
else()
  set(PXL_CHOLMOD_FOUND FALSE)
endif()
