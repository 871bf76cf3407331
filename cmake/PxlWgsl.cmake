# WGSL embedding (cmake/embed_wgsl.c does the work; see its header comment).
#
# pxl_embed_wgsl(<name> OUT_DIR <dir> KERNELS <file>... [INCLUDE_DIRS <dir>...] [DEPENDS <file>...])
#   Expands the #includes of every kernel file and embeds it as
#   `const char pxl_wgsl_<name>_<file stem>[]`, declared in <dir>/wgsl_<name>.h.
#   Sets PXL_WGSL_<name>_C to the generated C file (add it to a target, and
#   <dir> to that target's include directories). DEPENDS lists the include
#   files, so that editing one re-embeds.
if(NOT TARGET pxl_embed_wgsl)
  add_executable(pxl_embed_wgsl ${CMAKE_CURRENT_LIST_DIR}/embed_wgsl.c)
  target_compile_definitions(pxl_embed_wgsl PRIVATE _POSIX_C_SOURCE=200809L)
endif()

function(pxl_embed_wgsl name)
  cmake_parse_arguments(E "" "OUT_DIR" "KERNELS;INCLUDE_DIRS;DEPENDS" ${ARGN})
  set(inc)
  foreach(d ${E_INCLUDE_DIRS})
    list(APPEND inc -I ${d})
  endforeach()
  add_custom_command(
    OUTPUT ${E_OUT_DIR}/wgsl_${name}.c ${E_OUT_DIR}/wgsl_${name}.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${E_OUT_DIR}
    COMMAND pxl_embed_wgsl --name ${name} --root ${PROJECT_SOURCE_DIR} --out ${E_OUT_DIR} ${inc} ${E_KERNELS}
    DEPENDS pxl_embed_wgsl ${E_KERNELS} ${E_DEPENDS}
    COMMENT "Embedding the WGSL of ${name}" VERBATIM)
  set(PXL_WGSL_${name}_C ${E_OUT_DIR}/wgsl_${name}.c PARENT_SCOPE)
endfunction()

# pxl_embed_subsystem_wgsl(<subsystem>): the kernels src/<subsystem>/wgsl/*.wgsl,
# with src/<subsystem>/wgsl/common/ and src/gpu/wgsl/common/ (WGSL every
# product may share) searched for includes; files under any common/ are never
# kernels. Output in <build>/generated/wgsl/<subsystem>/.
function(pxl_embed_subsystem_wgsl sub)
  set(src ${PROJECT_SOURCE_DIR}/src)
  file(GLOB kernels CONFIGURE_DEPENDS ${src}/${sub}/wgsl/*.wgsl)
  file(GLOB_RECURSE includes CONFIGURE_DEPENDS ${src}/${sub}/wgsl/common/*.wgsl ${src}/gpu/wgsl/common/*.wgsl)
  pxl_embed_wgsl(${sub} OUT_DIR ${PROJECT_BINARY_DIR}/generated/wgsl/${sub} KERNELS ${kernels}
    INCLUDE_DIRS ${src}/${sub}/wgsl/common ${src}/gpu/wgsl/common DEPENDS ${includes})
  set(PXL_WGSL_${sub}_C ${PXL_WGSL_${sub}_C} PARENT_SCOPE)
endfunction()
