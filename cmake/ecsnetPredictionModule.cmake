# ecsnet_add_prediction_module(<name> SOURCES <file>... [INCLUDE_DIRECTORIES <dir>...]
#                              [SCHEMA_TARGETS <target>...] [OUTPUT_DIRECTORY <dir>])
#
# A game's predicted part as WebAssembly for the TypeScript SDK (docs/PREDICTION.md, "In the
# browser"): Debian's emscripten (em++ 3.1.6, scripts/install-deps.sh web) compiles the game's
# SOURCES (its predicted systems and the one that defines ecsnet::client::declare_prediction) with
# the ECS, the protocol's mirror and the C++ SDK's prediction behind the C ABI of
# ecsnet/client/prediction_module.h, into <OUTPUT_DIRECTORY>/<name>.js and <name>.wasm (default:
# this directory's build directory), built by the target <name>. SCHEMA_TARGETS: targets whose
# ecsnet_add_schemas headers the sources include.
#
# The floating-point rules are the native build's: no -ffast-math, no contraction into fused
# multiply-adds (-ffp-contract=off; x86-64's baseline has no FMA either), IEEE single and double
# precision. C++ exceptions are on (-fexceptions): a predicted system that throws is counted and
# skipped, as natively. NDEBUG, as a Release build: the ECS's hot-path checks off.
include_guard(GLOBAL)

# ecsnet's part of every module: the mirror (and what it reads frames with), the prediction, the
# C ABI. ECSNET_PREDICTION_MODULE_SOURCES and _INCLUDES are set by ecsnet's CMakeLists.txt in its
# own tree, and by ecsnetConfig.cmake when installed (<prefix>/share/ecsnet/prediction-module).
set(ECSNET_PREDICTION_MODULE_FILES
    protocol/checksum.cpp protocol/columns.cpp protocol/frame.cpp protocol/messages.cpp
    protocol/mirror.cpp protocol/registry.cpp protocol/schema.cpp client/prediction.cpp
    client/prediction_module.cpp)

function(ecsnet_add_prediction_module name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT_DIRECTORY" "SOURCES;INCLUDE_DIRECTORIES;SCHEMA_TARGETS")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "ecsnet_add_prediction_module(${name}): no SOURCES (the game's predicted "
                        "systems and its declare_prediction)")
  endif()
  find_program(ECSNET_EMXX em++)
  if(NOT ECSNET_EMXX)
    message(FATAL_ERROR "ecsnet_add_prediction_module(${name}): em++ not found (Debian: "
                        "scripts/install-deps.sh web, or apt-get install emscripten)")
  endif()
  if(NOT arg_OUTPUT_DIRECTORY)
    set(arg_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT ECSNET_PREDICTION_MODULE_SOURCES OR NOT ECSNET_PREDICTION_MODULE_INCLUDES)
    message(FATAL_ERROR "ecsnet_add_prediction_module: ecsnet's sources are not known (call it "
                        "after find_package(ecsnet), or in ecsnet's own tree)")
  endif()

  # The host's /usr/include may not be on em++'s path (its own libc and libc++ are): the
  # header-only libraries are seen through links to them alone.
  set(system_dir ${CMAKE_BINARY_DIR}/ecsnet_wasm_include)
  foreach(entry flatbuffers boost xxhash.h)
    if(NOT EXISTS ${system_dir}/${entry})
      if(NOT EXISTS /usr/include/${entry})
        message(FATAL_ERROR "ecsnet_add_prediction_module: /usr/include/${entry} is missing "
                            "(Debian: libflatbuffers-dev, libboost1.81-dev, libxxhash-dev)")
      endif()
      file(MAKE_DIRECTORY ${system_dir})
      file(CREATE_LINK /usr/include/${entry} ${system_dir}/${entry} SYMBOLIC)
    endif()
  endforeach()

  set(includes)
  foreach(dir IN LISTS ECSNET_PREDICTION_MODULE_INCLUDES arg_INCLUDE_DIRECTORIES)
    get_filename_component(dir ${dir} ABSOLUTE)
    list(APPEND includes -I${dir})
  endforeach()
  set(generated ${ECSNET_PREDICTION_MODULE_DEPENDS})
  foreach(target IN LISTS arg_SCHEMA_TARGETS)
    get_target_property(dir ${target} BINARY_DIR)
    list(APPEND includes -I${dir}/${target}_schemas)
    list(APPEND generated ${target})
  endforeach()
  list(APPEND includes -isystem ${system_dir})
  set(flags -std=c++20 -O2 -fexceptions -ffp-contract=off -DNDEBUG -Wall -Wextra -Wpedantic)
  if(ECSNET_WERROR)
    list(APPEND flags -Werror)
  endif()

  set(object_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}.wasm-objects)
  set(objects)
  # NODE_PATH: em++'s optimizer requires Debian's acorn, which only Debian's node finds alone.
  set(env ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
  set(index 0)
  foreach(source IN LISTS ECSNET_PREDICTION_MODULE_SOURCES arg_SOURCES)
    get_filename_component(source ${source} ABSOLUTE)
    get_filename_component(stem ${source} NAME_WE)
    math(EXPR index "${index} + 1")
    set(object ${object_dir}/${index}_${stem}.o)  # numbered: two sources may share a name
    add_custom_command(
      OUTPUT ${object}
      COMMAND ${env} ${ECSNET_EMXX} ${flags} ${includes} -MD -MF ${object}.d -c ${source} -o ${object}
      DEPENDS ${source} ${generated}
      DEPFILE ${object}.d
      COMMENT "em++ ${stem}.cpp (${name})"
      VERBATIM)
    list(APPEND objects ${object})
  endforeach()
  set(exported ecsnet_configure ecsnet_frame_buffer ecsnet_receive ecsnet_error ecsnet_track
               ecsnet_untrack ecsnet_input_value ecsnet_set_input ecsnet_update ecsnet_types_json
               ecsnet_view ecsnet_events ecsnet_stats malloc free)
  list(TRANSFORM exported PREPEND _)
  string(REPLACE ";" "," exported "${exported}")
  # MODULARIZE: a factory, instantiated by the SDK with the .wasm's bytes or URL; memory grows
  # (the SDK makes its views over it again after each call); no file system.
  set(out ${arg_OUTPUT_DIRECTORY}/${name}.js)
  add_custom_command(
    OUTPUT ${out} ${arg_OUTPUT_DIRECTORY}/${name}.wasm
    COMMAND ${CMAKE_COMMAND} -E make_directory ${arg_OUTPUT_DIRECTORY}
    COMMAND ${env} ${ECSNET_EMXX} -O2 -fexceptions -sMODULARIZE=1 -sEXPORT_NAME=createPredictionModule
            -sALLOW_MEMORY_GROWTH=1 -sFILESYSTEM=0 -sENVIRONMENT=web,worker,node
            -sEXPORTED_FUNCTIONS=${exported}
            -sEXPORTED_RUNTIME_METHODS=UTF8ToString,stringToUTF8,lengthBytesUTF8
            ${objects} -o ${out}
    DEPENDS ${objects}
    COMMENT "em++ link ${name}.js + ${name}.wasm"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${out})
endfunction()
