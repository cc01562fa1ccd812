# ecsnet_add_schemas(<target> <file.fbs>... [COMPONENTS] [TYPESCRIPT_DIR <dir>]): flatc compiles
# a game's own schemas at build time into <target>'s build directory; `#include
# "<file>_generated.h"` then finds them. With COMPONENTS, ecsnet-codegen also writes
# `<file>_components.hpp` beside it: the C++ components the schema declares (structs marked
# `(ecsnet_component: "name")`), their replicated<> and register_components() (docs/EXTENDING.md,
# "Declared once"); with TYPESCRIPT_DIR, `<file>_components.ts` too, in <dir> (the game's page
# imports it), the same types for the TypeScript SDK.
#
# Used by ecsnet's own games and, installed (<prefix>/lib/cmake/ecsnet), by a game's project
# after find_package(ecsnet). flatc is the one FlatBuffers' package config exports
# (flatbuffers::flatc), else the first `flatc` on the PATH; its version must match the
# FlatBuffers headers the generated code includes (Debian 12: both 2.0.8).
include_guard(GLOBAL)

function(ecsnet_add_schemas target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "COMPONENTS" "TYPESCRIPT_DIR" "")
  set(schemas ${arg_UNPARSED_ARGUMENTS})
  if(arg_TYPESCRIPT_DIR AND NOT arg_COMPONENTS)
    message(FATAL_ERROR "ecsnet_add_schemas(${target}): TYPESCRIPT_DIR needs COMPONENTS")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "ecsnet_add_schemas: no target named '${target}': call it after "
                        "add_executable/add_library(${target} ...)")
  endif()
  if(NOT schemas)
    message(FATAL_ERROR "ecsnet_add_schemas(${target}): no .fbs file given")
  endif()
  # ecsnet-codegen: this build's (in ecsnet's own tree) or the installed one (ecsnet::codegen).
  if(arg_COMPONENTS)
    if(TARGET ecsnet-codegen)
      set(codegen ecsnet-codegen)
    elseif(TARGET ecsnet::codegen)
      set(codegen ecsnet::codegen)
    else()
      message(FATAL_ERROR "ecsnet_add_schemas(${target} COMPONENTS): ecsnet-codegen not found "
                          "(find_package(ecsnet) first)")
    endif()
  endif()
  # An imported target is visible only in the directory that created it (and below), so the
  # caller's project may not see the one ecsnet found: look again from here.
  if(NOT TARGET flatbuffers::flatc)
    find_package(FlatBuffers CONFIG QUIET)
  endif()
  if(TARGET flatbuffers::flatc)
    set(flatc flatbuffers::flatc)
  else()
    find_program(ECSNET_FLATC flatc)
    if(NOT ECSNET_FLATC)
      message(FATAL_ERROR "ecsnet_add_schemas: flatc not found (Debian: apt-get install "
                          "flatbuffers-compiler), or set ECSNET_FLATC to its path")
    endif()
    set(flatc ${ECSNET_FLATC})
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_schemas)
  set(headers)
  foreach(schema IN LISTS schemas)
    get_filename_component(path ${schema} ABSOLUTE)
    if(NOT EXISTS ${path})
      message(FATAL_ERROR "ecsnet_add_schemas(${target}): ${path} does not exist")
    endif()
    get_filename_component(stem ${schema} NAME_WE)
    get_filename_component(schema_dir ${path} DIRECTORY)
    set(header ${out_dir}/${stem}_generated.h)
    add_custom_command(
      OUTPUT ${header}
      COMMAND ${flatc} --cpp --scoped-enums --cpp-std c++17 --cpp-static-reflection
              -I ${schema_dir} -o ${out_dir} ${path}
      DEPENDS ${path}
      COMMENT "flatc ${stem}.fbs"
      VERBATIM)
    list(APPEND headers ${header})
    if(arg_COMPONENTS)
      set(components ${out_dir}/${stem}_components.hpp)
      set(outputs ${components})
      set(ts_args)
      if(arg_TYPESCRIPT_DIR)
        get_filename_component(ts_dir ${arg_TYPESCRIPT_DIR} ABSOLUTE)
        list(APPEND outputs ${ts_dir}/${stem}_components.ts)
        set(ts_args --ts ${ts_dir}/${stem}_components.ts)
      endif()
      add_custom_command(
        OUTPUT ${outputs}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir} ${ts_dir}
        COMMAND $<TARGET_FILE:${codegen}> --cpp ${components} ${ts_args} -I ${schema_dir} ${path}
        DEPENDS ${path} ${codegen}
        COMMENT "ecsnet-codegen ${stem}.fbs"
        VERBATIM)
      list(APPEND headers ${outputs})
    endif()
  endforeach()
  add_custom_target(${target}_schemas DEPENDS ${headers})
  add_dependencies(${target} ${target}_schemas)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${out_dir})
  else()
    target_include_directories(${target} PUBLIC ${out_dir})
  endif()
endfunction()
