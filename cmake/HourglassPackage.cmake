# The Debian package of `hourglass serve` as a system service (scripts/package.sh builds it):
#   /usr/bin/hourglass, its manual page hourglass(1) (from the binary's own --help texts),
#   /lib/systemd/system/hourglass.service, /etc/default/hourglass and /etc/hourglass/policy.yaml
#   (conffiles: an upgrade keeps the operator's edits), a system user `hourglass`, and
#   /usr/share/doc/hourglass (reference, OpenAPI, examples, alerting rules, dashboard).
# Only the runtime and service components go in; the libraries and headers stay out.
# The service files install to absolute paths, so `cmake --install` of this build needs root
# unless it names its components (tests/consumer does).

add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/hourglass.1.gz
  COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/man.sh $<TARGET_FILE:hourglass>
          > ${PROJECT_BINARY_DIR}/hourglass.1
  COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/hourglass.1
  DEPENDS hourglass ${PROJECT_SOURCE_DIR}/packaging/man.sh ${PROJECT_SOURCE_DIR}/docs/reference.md
  COMMENT "hourglass(1) from the binary's --help and the reference")
add_custom_target(hourglass_man ALL DEPENDS ${PROJECT_BINARY_DIR}/hourglass.1.gz)

install(FILES ${PROJECT_BINARY_DIR}/hourglass.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
  COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/hourglass.service
  DESTINATION /lib/systemd/system COMPONENT service)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/default DESTINATION /etc/default
  RENAME hourglass COMPONENT service)
install(FILES ${PROJECT_SOURCE_DIR}/policies/example.yaml DESTINATION /etc/hourglass
  RENAME policy.yaml COMPONENT service)
# /usr/share/doc/hourglass: the README and the changes, the docs it links to (the reference, the
# HTTP API), example policies, and the monitoring (alerting rules with their tests, a dashboard).
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/policies/example.yaml
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/packaging/monitoring/
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/monitoring COMPONENT runtime)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hourglass)
set(CPACK_PACKAGE_VENDOR "the hourglass developers")
set(CPACK_PACKAGE_CONTACT "hourglass developers <hourglass@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "exact sliding-window rate limits over memcached, Redis or LMDB: CLI, HTTP, Envoy RLS")
set(CPACK_PACKAGE_DESCRIPTION
    "hourglass counts hits per event and feature in second, minute and hour buckets in memcached,
Redis (or Redis Cluster) or a local LMDB file, and answers how many lie in the last second, minute, hour or day exactly. hourglass serve
answers apps over HTTP, nginx through auth_request and Envoy over gRPC; this package runs it
as a systemd service reading /etc/hourglass/policy.yaml.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL runtime service)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # the build keeps debug information; the package does not
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the binary's shared libraries
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.50)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "memcached | redis-server")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
