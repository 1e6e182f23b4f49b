# Dependencies of tilejit, all from Debian packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)          # Boost.Hana (header-only)
find_package(fmt REQUIRED)
# xxhash: Debian ships no CMake config; the header and library are enough.
if(NOT TARGET tilejit_xxhash)
  find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
  find_library(XXHASH_LIBRARY NAMES xxhash REQUIRED)
  add_library(tilejit_xxhash INTERFACE IMPORTED)
  set_target_properties(tilejit_xxhash PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${XXHASH_LIBRARY}")
endif()
# CUDA headers for the driver/NVRTC types (no CUDA library is linked).
find_path(TILEJIT_CUDA_INCLUDE_DIR cuda.h HINTS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
