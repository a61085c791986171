# What `cmake --install` puts where, in two components: `runtime` (the cairn
# command, its man page and bash completion; the shared libraries when built
# shared) and `development` (the public headers, the libraries for linking,
# the CMake package and the pkg-config files). CPack (cmake/CairnPackage.cmake)
# makes the Debian packages `cairn` and `libcairn-dev` of them.
include(CMakePackageConfigHelpers)

# The public headers: everything under include/ but the generated version
# header's template, and the generated header itself.
install(DIRECTORY include/cairn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
  FILES_MATCHING PATTERN "*.hpp")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/cairn/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cairn COMPONENT development)

# cairn::cairn, cairn::agent (the coding agent, over cairn::cairn) and
# cairn::serve (the HTTP server, over cairn::cairn).
install(TARGETS cairn cairn_agent cairn_serve EXPORT cairnTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(TARGETS cairn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

set(CAIRN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cairn)
install(EXPORT cairnTargets NAMESPACE cairn:: DESTINATION ${CAIRN_CMAKE_DIR} COMPONENT development)
if(BUILD_SHARED_LIBS)
  set(CAIRN_SHARED ON)
else()
  set(CAIRN_SHARED OFF)
endif()
configure_package_config_file(cmake/cairnConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/cairnConfig.cmake
  INSTALL_DESTINATION ${CAIRN_CMAKE_DIR})
# While the major version is 0 a minor version may break the API: only the
# same minor version is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(CAIRN_COMPATIBILITY SameMinorVersion)
else()
  set(CAIRN_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cairnConfigVersion.cmake
  COMPATIBILITY ${CAIRN_COMPATIBILITY})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cairnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/cairnConfigVersion.cmake
  DESTINATION ${CAIRN_CMAKE_DIR} COMPONENT development)

# pkg-config: the prefix is found from the .pc file's own place, so that an
# install moved or made with `cmake --install --prefix` elsewhere still works.
file(RELATIVE_PATH CAIRN_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
if(BUILD_SHARED_LIBS)
  set(CAIRN_PC_REQUIRES "")
  set(CAIRN_PC_REQUIRES_PRIVATE "simdjson fmt sqlite3 libpq libseccomp")
  set(CAIRN_PC_LIBS "")
  set(CAIRN_PC_LIBS_PRIVATE "-pthread -ldl")
else()
  # A static library: what it was built with is needed to link at all, so
  # it is listed where `pkg-config --libs cairn` (without --static) sees it.
  set(CAIRN_PC_REQUIRES "simdjson fmt sqlite3 libpq libseccomp")
  set(CAIRN_PC_REQUIRES_PRIVATE "")
  set(CAIRN_PC_LIBS "-pthread -ldl")
  set(CAIRN_PC_LIBS_PRIVATE "")
endif()
configure_file(cmake/cairn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/cairn.pc @ONLY)
configure_file(cmake/cairn-agent.pc.in ${CMAKE_CURRENT_BINARY_DIR}/cairn-agent.pc @ONLY)
configure_file(cmake/cairn-serve.pc.in ${CMAKE_CURRENT_BINARY_DIR}/cairn-serve.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cairn.pc ${CMAKE_CURRENT_BINARY_DIR}/cairn-agent.pc
  ${CMAKE_CURRENT_BINARY_DIR}/cairn-serve.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

# The man page, from `cairn --help` and `cairn --version`.
option(CAIRN_MAN_PAGE "Generate and install cairn.1 with help2man" ON)
if(CAIRN_MAN_PAGE)
  find_program(CAIRN_HELP2MAN help2man)
  if(NOT CAIRN_HELP2MAN)
    message(FATAL_ERROR "help2man not found: it makes the man page (scripts/install-deps installs it; "
                        "-DCAIRN_MAN_PAGE=OFF builds without the page)")
  endif()
  # help2man reads `cairn --help`; each command's own --help goes into a
  # COMMANDS section (cmake/man_commands.sh).
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/cairn.1
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cmake/man_commands.sh $<TARGET_FILE:cairn_cli>
            ${CMAKE_CURRENT_BINARY_DIR}/cairn.1.commands
    COMMAND ${CAIRN_HELP2MAN} --no-info --section=1
            "--name=a coding agent whose sessions survive anything"
            --include=${CMAKE_CURRENT_BINARY_DIR}/cairn.1.commands
            --output=${CMAKE_CURRENT_BINARY_DIR}/cairn.1 $<TARGET_FILE:cairn_cli>
    DEPENDS cairn_cli ${CMAKE_CURRENT_SOURCE_DIR}/cmake/man_commands.sh VERBATIM)
  add_custom_target(cairn_man ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/cairn.1)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cairn.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
endif()

install(FILES scripts/bash-completion/cairn DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  COMPONENT runtime)

# The licence, where Debian's policy puts it for each package.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/cairn RENAME copyright COMPONENT runtime)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libcairn-dev RENAME copyright COMPONENT development)
