# Debian packages (`cpack -G DEB` in a build directory, scripts/package.sh): the install
# components of cmake/install.cmake, one package each, for Debian 12:
#   ecsnet      the programs (ecsnet-server, ecsnet-client, arena-server, arena-client) and the
#               web pages; Depends computed by dpkg-shlibdeps from what they link.
#   ecsnet-dev  headers, static libraries, the CMake package, pkg-config, schemas, the project
#               template and `ecsnet new`; Depends: the -dev packages a game's build needs.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ecsnet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ecsnet")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Networked, server-authoritative Entity-Component-System")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/ecsnet/ecsnet")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the programs (9.6 MB -> ~3 MB for ecsnet-server); not the .a files
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "ecsnet maintainers <maintainers@ecsnet.invalid>")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ecsnet)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "ecsnet's server and tools
ecsnet-server (the demo game), arena-server, the command-line client ecsnet-client, the
headless arena-client, and the web pages the servers serve (the inspector, the arena).")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps (dpkg-dev) and file

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ecsnet-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "ecsnet's libraries and headers, to build a game on ecsnet
The ECS (header-only), the protocol, the client SDK and the server as static libraries, with
find_package(ecsnet), ecsnet_add_schemas(), a pkg-config file for the client, the protocol's
schemas, the guides, and `ecsnet new`, which creates a game project.")
# What cmake/ecsnetConfig.cmake.in finds, and flatc at the version of the headers it generates
# code for (FlatBuffers checks the version at compile time).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "cmake (>= 3.25), g++ (>= 4:12), pkg-config, libboost1.81-dev, libflatbuffers-dev (>= 2.0.8), libflatbuffers-dev (<< 2.0.9), flatbuffers-compiler (>= 2.0.8), flatbuffers-compiler (<< 2.0.9), libssl-dev, libxxhash-dev, libspdlog-dev, libcli11-dev, nlohmann-json3-dev, libcpp-jwt-dev, prometheus-cpp-dev")
# The template's test (GoogleTest), its build (Ninja) and its web page (node, npm).
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "ecsnet (= ${PROJECT_VERSION}-1), ninja-build, libgtest-dev, nodejs, npm")

include(CPack)
