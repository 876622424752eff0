# Quicker builds of hourglass's own tree, with tools Debian packages (scripts/install-deps.sh):
# - ccache, when installed, caches compilations across build folders and clones: paths under the
#   source folder are hashed relative to it (CCACHE_BASEDIR), so a fresh clone elsewhere on the
#   machine reuses the objects of an earlier build with the same flags (HOURGLASS_CCACHE=OFF to
#   do without);
# - mold, when installed, links (several times faster than ld.bfd; HOURGLASS_MOLD=OFF: the
#   compiler's default linker).
option(HOURGLASS_CCACHE "Compile through ccache when it is installed" ON)
option(HOURGLASS_MOLD "Link with mold when it is installed" ON)

if(HOURGLASS_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(HOURGLASS_CCACHE_PROGRAM ccache)
  if(HOURGLASS_CCACHE_PROGRAM)
    # Precompiled headers need the sloppiness to be cached; the folder a compiler runs in (kept
    # in debug information) is left out of the hash, so another clone's objects are found.
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
        "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        ${HOURGLASS_CCACHE_PROGRAM})
  endif()
endif()

if(HOURGLASS_MOLD)
  find_program(HOURGLASS_MOLD_PROGRAM mold)
  if(HOURGLASS_MOLD_PROGRAM)
    add_link_options(-fuse-ld=mold)
  endif()
endif()
