# tilejit_add_profiler_plugin(<target> SOURCES <file>... [OUTPUT_NAME <name>]
#                             [LINK_LIBRARIES <lib>...])
#
# Builds an out-of-tree profiler backend as a loadable module (<name>.so, no
# "lib" prefix) for tilejit::profiler::load_plugin() / TILEJIT_PROFILER_PLUGINS.
# The module gets tilejit's include directories and C++20 but does NOT link
# libtilejit: a plugin reaches tilejit only through the PluginHost table it is
# handed (tilejit/profiler/plugin.hpp), so it feeds the host process's one
# profiler. Symbols are hidden except the entry point the TILEJIT_PROFILER_PLUGIN
# macro defines (and whatever the plugin marks visible itself).
#
# Available after find_package(tilejit) and inside tilejit's own build.
function(tilejit_add_profiler_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tilejit_add_profiler_plugin(${target}): no SOURCES")
  endif()
  if(NOT TARGET tilejit::tilejit)
    message(FATAL_ERROR "tilejit_add_profiler_plugin(${target}): tilejit::tilejit is not defined "
                        "(call find_package(tilejit) first)")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_include_directories(${target} PRIVATE
    $<TARGET_PROPERTY:tilejit::tilejit,INTERFACE_INCLUDE_DIRECTORIES>)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  find_package(Threads REQUIRED)
  target_link_libraries(${target} PRIVATE Threads::Threads ${ARG_LINK_LIBRARIES})
endfunction()
