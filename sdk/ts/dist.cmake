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
