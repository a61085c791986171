# Debian packages with CPack (`cpack -G DEB` in the build directory):
#   cairn         the cairn command, its man page and bash completion (and
#                 libcairn.so when built with -DBUILD_SHARED_LIBS=ON)
#   libcairn-dev  the public headers, the libraries to link, the CMake package
#                 and cairn.pc, cairn-agent.pc, cairn-serve.pc
# The shared-library dependencies are found by dpkg-shlibdeps; what cairn
# loads or runs by name is declared here.
set(CPACK_PACKAGE_NAME cairn)
set(CPACK_PACKAGE_VENDOR "the cairn developers")
set(CPACK_PACKAGE_CONTACT "the cairn developers <cairn@localhost>")
# The first line of both packages' descriptions; the rest is each one's own.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "durable agent harness whose sessions survive anything")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/packages)
set(CPACK_GENERATOR DEB)
# The build keeps line tables for backtraces; the packages do without.
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime development)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME cairn)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "cairn writes every decision of an agent run to an append-only session log
before it acts: kill it at any moment and `cairn resume` goes on where the
log says it was, running no effect twice.")
# libcurl is opened with dlopen on the first model request (so dpkg-shlibdeps
# cannot see it); the grep and find tools run rg.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libcurl4 (>= 7.88)")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "ripgrep")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libcairn-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "The headers, the libraries, the CMake package (find_package(cairn)) and the
pkg-config files (cairn.pc, cairn-agent.pc, cairn-serve.pc) for embedding cairn's durable agent harness, its
coding agent and its HTTP server.")
# The public headers include nlohmann/json; a static libcairn links with the
# libraries it was built with.
set(CAIRN_DEV_DEPENDS "nlohmann-json3-dev (>= 3.10)")
if(NOT BUILD_SHARED_LIBS)
  string(APPEND CAIRN_DEV_DEPENDS ", libsimdjson-dev, libfmt-dev, libsqlite3-dev, libpq-dev, libseccomp-dev, pkg-config, libcurl4")
endif()
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${CAIRN_DEV_DEPENDS}")
if(BUILD_SHARED_LIBS)
  # libcairn.so itself is in the runtime package.
  set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
  set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
endif()

include(CPack)
