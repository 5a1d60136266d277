# Fails when a source under modules/ or losses/ includes an envs header: those packages build
# on tensordict and tdrl::specs only (specs, keys), never on the environments.
# Run as: cmake -DSOURCE_DIR=<tdrl source> -P TestLayering.cmake
set(violations "")
foreach(package modules losses)
  file(GLOB_RECURSE sources "${SOURCE_DIR}/${package}/*.h" "${SOURCE_DIR}/${package}/*.cpp")
  foreach(source ${sources})
    file(STRINGS "${source}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]tdrl/envs[/.]")
    foreach(line ${lines})
      file(RELATIVE_PATH rel "${SOURCE_DIR}" "${source}")
      string(APPEND violations "\n  ${rel}: ${line}")
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "modules/ and losses/ must not include envs headers; use <tdrl/specs/...> "
    "for specs and keys:${violations}")
endif()
message(STATUS "layering: no envs include under modules/ or losses/")
