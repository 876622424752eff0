# C++ message and gRPC service code from .proto files, with Debian's protoc and grpc_cpp_plugin.
#
#   hourglass_grpc_library(target ROOT dir PROTOS a/b.proto c/d.proto)
#
# builds a static library `target` from ROOT/a/b.proto ... (imports resolve under ROOT, and
# google/protobuf/* from the protobuf package); its users include "a/b.pb.h", "a/b.grpc.pb.h".
# Needs find_package(Protobuf) and find_package(gRPC CONFIG) in the calling directory or above.
function(hourglass_grpc_library target)
  cmake_parse_arguments(ARG "" "ROOT" "PROTOS" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${target}_gen)
  file(MAKE_DIRECTORY ${out})
  set(sources)
  foreach(proto ${ARG_PROTOS})
    string(REGEX REPLACE "\\.proto$" "" stem ${proto})
    set(generated ${out}/${stem}.pb.cc ${out}/${stem}.pb.h ${out}/${stem}.grpc.pb.cc
                  ${out}/${stem}.grpc.pb.h)
    add_custom_command(
      OUTPUT ${generated}
      COMMAND protobuf::protoc --proto_path=${ARG_ROOT} --cpp_out=${out} --grpc_out=${out}
              --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${proto}
      DEPENDS ${ARG_ROOT}/${proto} protobuf::protoc gRPC::grpc_cpp_plugin
      WORKING_DIRECTORY ${ARG_ROOT}
      COMMENT "protoc ${proto}"
      VERBATIM)
    list(APPEND sources ${out}/${stem}.pb.cc ${out}/${stem}.grpc.pb.cc)
  endforeach()
  add_library(${target} STATIC ${sources})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Generated code: the project's warning flags do not apply; its headers are system headers.
  target_include_directories(${target} SYSTEM PUBLIC $<BUILD_INTERFACE:${out}>
                                                    $<INSTALL_INTERFACE:include>)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf gRPC::grpc++)
endfunction()
