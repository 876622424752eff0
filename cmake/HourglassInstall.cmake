# `cmake --install build --prefix P` installs the hourglass binary (component runtime), the
# libraries, their headers and a CMake package (component development), so that a consumer writes
#   find_package(hourglass REQUIRED)                      # hourglass::engine and the stores
#   find_package(hourglass REQUIRED COMPONENTS policy json)  # also the policy and JSON libraries
#   find_package(hourglass REQUIRED COMPONENTS service)      # the HTTP decision service
#   find_package(hourglass REQUIRED COMPONENTS rls)          # Envoy's rate limit configurations
#   find_package(hourglass REQUIRED COMPONENTS rls_service)  # Envoy's rate limit service (gRPC)
# The engine and stores need fmt, OpenSSL, libmemcached, hiredis and LMDB; only the components need yaml-cpp,
# nlohmann-json, for the service Boost (headers) and prometheus-cpp, for rls_service protobuf,
# gRPC and nghttp2; nothing installed needs CLI11.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(hourglass_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hourglass)

function(hourglass_install_set set_name)
  install(TARGETS ${ARGN} EXPORT hourglass${set_name}Targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT hourglass${set_name}Targets NAMESPACE hourglass::
    DESTINATION ${hourglass_cmake_dir} COMPONENT development)
endfunction()

hourglass_install_set(Core hourglass_display hourglass_engine hourglass_memory_store hourglass_net
                      hourglass_packed_layout hourglass_memcached_store hourglass_redis_store
                      hourglass_lmdb_store
                      hourglass_transition_store hourglass_replicated_store hourglass_stores
                      hourglass_fallback)
install(DIRECTORY
  ${PROJECT_SOURCE_DIR}/display/include/
  ${PROJECT_SOURCE_DIR}/engine/include/
  ${PROJECT_SOURCE_DIR}/fallback/include/
  ${PROJECT_SOURCE_DIR}/stores/memory/include/
  ${PROJECT_SOURCE_DIR}/stores/net/include/
  ${PROJECT_SOURCE_DIR}/stores/packed/include/
  ${PROJECT_SOURCE_DIR}/stores/memcached/include/
  ${PROJECT_SOURCE_DIR}/stores/redis/include/
  ${PROJECT_SOURCE_DIR}/stores/lmdb/include/
  ${PROJECT_SOURCE_DIR}/stores/transition/include/
  ${PROJECT_SOURCE_DIR}/stores/replicated/include/
  ${PROJECT_SOURCE_DIR}/stores/factory/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)

if(HOURGLASS_BUILD_CLI)
  hourglass_install_set(Policy hourglass_policy)
  hourglass_install_set(Json hourglass_json)
  hourglass_install_set(Service hourglass_service hourglass_top)
  hourglass_install_set(Rls hourglass_rls)
  hourglass_install_set(RlsService hourglass_h2 hourglass_rls_proto hourglass_rls_service)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/policy/include/ ${PROJECT_SOURCE_DIR}/json/include/
    ${PROJECT_SOURCE_DIR}/service/include/ ${PROJECT_SOURCE_DIR}/top/include/
    ${PROJECT_SOURCE_DIR}/h2/include/ ${PROJECT_SOURCE_DIR}/rls/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
  # The protocol's generated message headers (envoy/service/ratelimit/v3/rls.pb.h, ...).
  install(DIRECTORY ${PROJECT_BINARY_DIR}/rls/hourglass_rls_proto_gen/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development FILES_MATCHING PATTERN "*.h")
  install(TARGETS hourglass RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hourglassConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hourglassConfig.cmake
  INSTALL_DESTINATION ${hourglass_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hourglassConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hourglassConfig.cmake
  ${PROJECT_BINARY_DIR}/hourglassConfigVersion.cmake
  DESTINATION ${hourglass_cmake_dir} COMPONENT development)
