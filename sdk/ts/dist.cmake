# The TypeScript SDK's dist/ (npm run build: flatc --ts, tsc, esbuild), which every web page
# bundles (inspector/, games/arena/web/). Included by the top-level CMakeLists.txt when ECSNET_WEB
# is ON; needs `npm ci` in sdk/ts (scripts/test.sh).
set(ecsnet_sdk_ts_dir ${PROJECT_SOURCE_DIR}/sdk/ts)
file(GLOB ecsnet_sdk_ts_sources CONFIGURE_DEPENDS ${ecsnet_sdk_ts_dir}/src/*.ts
     ${ecsnet_sdk_ts_dir}/src/transports/*.ts ${ecsnet_sdk_ts_dir}/scripts/*.mjs
     ${PROJECT_SOURCE_DIR}/schemas/*.fbs)
add_custom_command(
  OUTPUT ${ecsnet_sdk_ts_dir}/dist/ecsnet.js
  COMMAND ${ECSNET_NPM} run build
  DEPENDS ${ecsnet_sdk_ts_sources} ${ecsnet_sdk_ts_dir}/package-lock.json
          ${ecsnet_sdk_ts_dir}/tsconfig.json
  WORKING_DIRECTORY ${ecsnet_sdk_ts_dir}
  COMMENT "Building the TypeScript SDK (sdk/ts/dist)"
  VERBATIM)
add_custom_target(ecsnet_sdk_ts_dist DEPENDS ${ecsnet_sdk_ts_dir}/dist/ecsnet.js)

# The npm package (`npm pack` of a copy: scripts/pack.mjs) in share/ecsnet/npm, which the -dev
# package installs for projects made by `ecsnet new` (their web/package.json names it). Built on
# demand (scripts/package.sh builds it), not by every build. Its version is ecsnet's.
file(READ ${ecsnet_sdk_ts_dir}/package.json ecsnet_sdk_ts_package_json)
string(JSON ecsnet_sdk_ts_version GET "${ecsnet_sdk_ts_package_json}" version)
if(NOT ecsnet_sdk_ts_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "sdk/ts/package.json has version ${ecsnet_sdk_ts_version}, ecsnet is "
                      "${PROJECT_VERSION}: the npm package takes ecsnet's version (docs/EXTENDING.md, "
                      "\"Upgrading\")")
endif()
set(ECSNET_NPM_TARBALL ${CMAKE_BINARY_DIR}/share/ecsnet/npm/ecsnet-client-${PROJECT_VERSION}.tgz)
add_custom_command(
  OUTPUT ${ECSNET_NPM_TARBALL}
  COMMAND ${CMAKE_COMMAND} -E env ECSNET_NPM=${ECSNET_NPM}
          ${ECSNET_NODE} scripts/pack.mjs ${CMAKE_BINARY_DIR}/share/ecsnet/npm
  DEPENDS ${ecsnet_sdk_ts_sources} ${ecsnet_sdk_ts_dir}/package.json
          ${ecsnet_sdk_ts_dir}/package-lock.json ${ecsnet_sdk_ts_dir}/README.md
  WORKING_DIRECTORY ${ecsnet_sdk_ts_dir}
  COMMENT "npm pack: the TypeScript SDK's package (share/ecsnet/npm)"
  VERBATIM)
add_custom_target(ecsnet_sdk_ts_package DEPENDS ${ECSNET_NPM_TARBALL})
