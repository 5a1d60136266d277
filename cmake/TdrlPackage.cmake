# The installed tdrl package: every library under one export set (tdrlTargets, namespace tdrl::)
# and the tools in bin/. tensordict keeps its own package (tensordictTargets) so that
# find_package(tensordict) alone still works; tdrlConfig.cmake finds it as a dependency.

include(GNUInstallDirs)

# Makes `target` a library of the installed package, exported as tdrl::<export_name>: its public
# headers (include/ beside the calling CMakeLists.txt) are installed, and its include path points
# at the source tree when built here and at the prefix once installed.
function(tdrl_package_library target export_name)
  get_target_property(dir ${target} SOURCE_DIR)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${dir}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # No <target>_EXPORTS definition: nothing reads it, and it would differ from the PCH's flags.
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name} DEFINE_SYMBOL "")
  install(TARGETS ${target} EXPORT tdrlTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set_property(GLOBAL APPEND PROPERTY TDRL_PACKAGE_COMPONENTS ${export_name})
endfunction()

# tdrl_add_library(<name> SOURCES <src>... [PUBLIC <dep>...] [PRIVATE <dep>...])
#   Defines the package library tdrl_<name> (alias and export tdrl::<name>) from SOURCES, with
#   its private headers under src/ and its dependencies, position-independent (it also goes into
#   the shared build and plugins) and with the project's defaults.
function(tdrl_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(target tdrl_${name})
  add_library(${target} ${ARG_SOURCES})
  add_library(tdrl::${name} ALIAS ${target})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  tdrl_package_library(${target} ${name})
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
  target_compile_features(${target} PUBLIC cxx_std_${TDRL_CXX_STANDARD})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  tdrl_target_defaults(${target})
endfunction()

# Writes and installs tdrlConfig.cmake, its version file and the export set. Call once, after
# every tdrl_package_library.
function(tdrl_install_package)
  include(CMakePackageConfigHelpers)
  get_property(TDRL_COMPONENTS GLOBAL PROPERTY TDRL_PACKAGE_COMPONENTS)
  set(destination ${CMAKE_INSTALL_LIBDIR}/cmake/tdrl)
  install(EXPORT tdrlTargets NAMESPACE tdrl:: DESTINATION ${destination})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tdrlConfig.cmake.in
    ${PROJECT_BINARY_DIR}/tdrlConfig.cmake
    INSTALL_DESTINATION ${destination})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/tdrlConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/tdrlConfig.cmake ${PROJECT_BINARY_DIR}/tdrlConfigVersion.cmake
    DESTINATION ${destination})
endfunction()
