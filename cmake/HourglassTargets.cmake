include(GNUInstallDirs)

# Compile options for hourglass's own targets, set per target so that a parent project that adds
# hourglass with add_subdirectory() keeps its own flags.
function(hourglass_target_options target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    $<$<BOOL:${HOURGLASS_WERROR}>:-Werror>)
endfunction()

# A library of hourglass: `name` is its exported name (hourglass::name), `folder` holds its
# include/ directory (public headers, installed) beside its sources.
function(hourglass_library name folder)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(hourglass_${name} STATIC ${ARG_SOURCES})
  add_library(hourglass::${name} ALIAS hourglass_${name})
  set_target_properties(hourglass_${name} PROPERTIES
    EXPORT_NAME ${name}
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(hourglass_${name} PUBLIC
    $<BUILD_INTERFACE:${folder}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(hourglass_${name} PUBLIC cxx_std_20)
  hourglass_target_options(hourglass_${name})
endfunction()
