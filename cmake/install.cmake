# `cmake --install`: the libraries a game links, their headers, the schemas, the CMake package
# (find_package(ecsnet)), a pkg-config file for the client, the stock programs, the web pages,
# the project template and `ecsnet new`. Two components, which are also the two Debian packages
# (cmake/packaging.cmake): runtime (the programs and pages) and dev (everything a build needs).
include(CMakePackageConfigHelpers)

set(ECSNET_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ecsnet CACHE STRING
    "Where the CMake package (ecsnetConfig.cmake) is installed, relative to the prefix")
set(ecsnet_share_dir ${CMAKE_INSTALL_DATADIR}/ecsnet)

# ---- dev: libraries, headers, schemas ----
set(ecsnet_installed_libraries ecsnet_ecs ecsnet_protocol ecsnet_asio ecsnet_client ecsnet_server)
foreach(library IN LISTS ecsnet_installed_libraries)
  string(REGEX REPLACE "^ecsnet_" "" name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${name})
endforeach()
# A game may link them into a shared library (a plugin, a Python module): compiled as PIC.
set_target_properties(ecsnet_protocol ecsnet_asio ecsnet_client ecsnet_server
                      PROPERTIES POSITION_INDEPENDENT_CODE ON)
install(TARGETS ${ecsnet_installed_libraries} EXPORT ecsnetTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# ecsnet_add_schemas(... COMPONENTS) runs it: exported as ecsnet::codegen.
set_target_properties(ecsnet-codegen PROPERTIES EXPORT_NAME codegen)
install(TARGETS ecsnet-codegen EXPORT ecsnetTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/shared/ecs/include/
                  ${PROJECT_SOURCE_DIR}/shared/protocol/include/
                  ${PROJECT_SOURCE_DIR}/shared/client/include/
                  ${PROJECT_SOURCE_DIR}/server/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# The protocol's own schemas compiled by flatc (ecsnet/wire/*_generated.h), ecsnet/version.hpp,
# and the schemas.
install(DIRECTORY ${ECSNET_GENERATED_ROOT}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*_generated.h" PATTERN "version.hpp")
install(FILES ${PROJECT_SOURCE_DIR}/schemas/common.fbs ${PROJECT_SOURCE_DIR}/schemas/client.fbs
              ${PROJECT_SOURCE_DIR}/schemas/server.fbs ${PROJECT_SOURCE_DIR}/schemas/state.fbs
        DESTINATION ${ecsnet_share_dir}/schemas COMPONENT dev)

# ---- dev: the CMake package ----
install(EXPORT ecsnetTargets NAMESPACE ecsnet:: DESTINATION ${ECSNET_INSTALL_CMAKEDIR}
        COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ecsnetConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/ecsnetConfig.cmake
                              INSTALL_DESTINATION ${ECSNET_INSTALL_CMAKEDIR}
                              PATH_VARS ecsnet_share_dir CMAKE_INSTALL_INCLUDEDIR)
# 0.y.z: a new minor version may break the API (docs/EXTENDING.md, "Upgrading"); from 1.0 on,
# only a new major version does.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ecsnet_compatibility SameMinorVersion)
else()
  set(ecsnet_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ecsnetConfigVersion.cmake
                                 COMPATIBILITY ${ecsnet_compatibility})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ecsnetConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ecsnetConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/ecsnetSchemas.cmake
              ${CMAKE_CURRENT_LIST_DIR}/ecsnetPredictionModule.cmake
        DESTINATION ${ECSNET_INSTALL_CMAKEDIR} COMPONENT dev)
# ecsnet_add_prediction_module compiles these with the game's sources (em++, for the browser).
foreach(file IN LISTS ECSNET_PREDICTION_MODULE_FILES)
  get_filename_component(part ${file} DIRECTORY)
  get_filename_component(name ${file} NAME)
  install(FILES ${PROJECT_SOURCE_DIR}/shared/${part}/src/${name}
          DESTINATION ${ecsnet_share_dir}/prediction-module/${part} COMPONENT dev)
endforeach()

# ---- dev: pkg-config, for the client library (a bot or tool built without CMake) ----
# Relocatable: the prefix relative to the .pc file, so that `cmake --install --prefix` anywhere
# (and the Debian package's /usr) give a working file.
file(RELATIVE_PATH ecsnet_pc_to_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${CMAKE_CURRENT_LIST_DIR}/ecsnet-client.pc.in
               ${CMAKE_CURRENT_BINARY_DIR}/ecsnet-client.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ecsnet-client.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# ---- dev: the guides a game's author reads (the template's README points here) ----
install(FILES ${PROJECT_SOURCE_DIR}/docs/EXTENDING.md ${PROJECT_SOURCE_DIR}/docs/CLIENT.md
              ${PROJECT_SOURCE_DIR}/docs/ECS.md ${PROJECT_SOURCE_DIR}/docs/PROTOCOL.md
              ${PROJECT_SOURCE_DIR}/docs/SERVER.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ecsnet-dev COMPONENT dev)

# ---- dev: the npm SDK's package, for the template's page (built by the target
# ecsnet_sdk_ts_package, which scripts/package.sh builds; absent otherwise) ----
if(ECSNET_WEB)
  install(FILES ${ECSNET_NPM_TARBALL} DESTINATION ${ecsnet_share_dir}/npm COMPONENT dev OPTIONAL)
endif()

# ---- dev: the project template and `ecsnet new` ----
install(DIRECTORY ${PROJECT_SOURCE_DIR}/templates/game/
        DESTINATION ${ecsnet_share_dir}/template COMPONENT dev USE_SOURCE_PERMISSIONS)
set(ECSNET_VERSION ${PROJECT_VERSION})
configure_file(${PROJECT_SOURCE_DIR}/templates/ecsnet ${CMAKE_CURRENT_BINARY_DIR}/ecsnet @ONLY)
install(PROGRAMS ${CMAKE_CURRENT_BINARY_DIR}/ecsnet DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT dev)

# ---- runtime: the stock programs and the web pages they serve ----
install(TARGETS ecsnet-server ecsnet-client arena-server arena-client
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# Bundled by node when ECSNET_WEB is ON (inspector/, games/arena/web/); ecsnet-server looks for
# them in <its directory>/../share/ecsnet/web.
if(ECSNET_WEB)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/share/ecsnet/web DESTINATION ${ecsnet_share_dir}
          COMPONENT runtime)
endif()
