# ctest script: installs the build tree into a scratch prefix, configures and builds
# tests/package/tdrl_consumer against that prefix alone, then trains and evaluates its user
# algorithm both through the user's own main (drift_train) and through the installed tools with
# the user's plugin, and checks that a bad config is refused before any run folder exists.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, SANITIZE, LAUNCHER, COMPILER (tdrl's).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")

# Runs a command in WORK_DIR (so a stray relative path lands there); fails the test unless it
# exits with `expect`. Leaves stdout and stderr in `output`.
function(run expect)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}"
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN ARGN " " command)
  if(NOT "${result}" STREQUAL "${expect}")
    message(FATAL_ERROR "expected exit code ${expect}, got ${result}: ${command}\n${out}\n${err}")
  endif()
  message(STATUS "${command}\n${out}")
  set(output "${out}\n${err}" PARENT_SCOPE)
endfunction()

# The one run folder under `parent`, into `var`; checks that it holds a complete run.
function(run_folder parent var)
  file(GLOB found LIST_DIRECTORIES true "${parent}/*")
  list(LENGTH found n)
  if(NOT n EQUAL 1 OR NOT IS_DIRECTORY "${found}")
    message(FATAL_ERROR "expected one run folder in ${parent}, found: ${found}")
  endif()
  foreach(file config.yaml metrics.csv checkpoints/latest)
    if(NOT EXISTS "${found}/${file}")
      file(GLOB_RECURSE present RELATIVE "${found}" "${found}/*")
      message(FATAL_ERROR "run folder ${found} has no ${file}; it holds: ${present}")
    endif()
  endforeach()
  # `latest` names the checkpoint folder; it must be there.
  file(READ "${found}/checkpoints/latest" latest)
  string(STRIP "${latest}" latest)
  if(latest STREQUAL "" OR NOT IS_DIRECTORY "${found}/checkpoints/${latest}")
    message(FATAL_ERROR "${found}/checkpoints/latest names '${latest}', which is not a folder")
  endif()
  set(${var} "${found}" PARENT_SCOPE)
endfunction()

run(0 ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

# The consumer sees the prefix and the system only: no package registry, no source tree.
include(${CMAKE_CURRENT_LIST_DIR}/PackageConsumerArgs.cmake)
# The project is built from a copy, so that the edit below changes nothing in the checkout.
set(sources "${WORK_DIR}/src")
file(COPY "${SOURCE_DIR}/" DESTINATION "${sources}")
run(0 ${CMAKE_COMMAND} -S "${sources}" -B "${build}" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${consumer_args})
file(STRINGS "${build}/CMakeCache.txt" tdrl_dir REGEX "^tdrl_DIR:")
string(FIND "${tdrl_dir}" "=${prefix}/" in_prefix)
if(in_prefix LESS 0)
  message(FATAL_ERROR "the consumer found tdrl outside the installed prefix: ${tdrl_dir}")
endif()
# The build, then a user's edit loop: one line of code added to the source with the env, loss and
# recipe, rebuilt (its precompiled header is reused: tdrl_precompile_headers). Both times are
# printed for docs/performance.md#build-time; they are reported, not checked.
string(TIMESTAMP start "%s")
run(0 ${CMAKE_COMMAND} --build "${build}")
string(TIMESTAMP built "%s")
# A code change, different each run, so that no compiler cache can answer it.
string(RANDOM LENGTH 16 stamp)
file(APPEND "${sources}/drift_components.cpp" "static_assert(true, \"an edit ${stamp}\");\n")
run(0 ${CMAKE_COMMAND} --build "${build}" --target drift_components)
string(TIMESTAMP rebuilt "%s")
math(EXPR build_s "${built} - ${start}")
math(EXPR edit_s "${rebuilt} - ${built}")
message(STATUS "consumer build: ${build_s} s; after an edit of drift_components.cpp: ${edit_s} s")
file(WRITE "${WORK_DIR}/compile_times.txt"
  "consumer build: ${build_s} s\nafter an edit of drift_components.cpp: ${edit_s} s\n")

set(drift_train "${build}/drift_train")
file(READ "${build}/drift_plugin_path.txt" plugin)
set(config "${SOURCE_DIR}/drift.yaml")

# a. The user's main trains the user's algorithm.
run(0 "${drift_train}" --config "${config}" --set "logger.dir=${WORK_DIR}/runs_main")
run_folder("${WORK_DIR}/runs_main" main_run)

# b. ... and evaluates it, as `drift_train eval`.
run(0 "${drift_train}" eval --run "${main_run}" --episodes 2)
if(NOT output MATCHES "return")
  message(FATAL_ERROR "drift_train eval printed no return:\n${output}")
endif()

# c. The installed tdrl-train trains it from the plugin, and config.yaml records the plugin.
run(0 "${prefix}/bin/tdrl-train" --plugin "${plugin}" --config "${config}"
    --set "logger.dir=${WORK_DIR}/runs_plugin")
run_folder("${WORK_DIR}/runs_plugin" plugin_run)
file(READ "${plugin_run}/config.yaml" recorded)
string(FIND "${recorded}" "plugins:" at_key)
string(FIND "${recorded}" "${plugin}" at_path)
if(at_key LESS 0 OR at_path LESS at_key)
  message(FATAL_ERROR "${plugin_run}/config.yaml does not list ${plugin} under plugins:\n"
                      "${recorded}")
endif()

# c1. The shipped configs and the config reference, which the tools' messages point to, are
#     installed.
foreach(shipped share/tdrl/configs/ppo_cartpole.yaml share/tdrl/docs/config.md)
  if(NOT EXISTS "${prefix}/${shipped}")
    message(FATAL_ERROR "the installed package has no ${shipped}")
  endif()
endforeach()

# c2. The installed tdrl-envs lists the plugin's env.
run(0 "${prefix}/bin/tdrl-envs" --plugin "${plugin}" --names-only)
if(NOT output MATCHES "Drift-v0")
  message(FATAL_ERROR "tdrl-envs --plugin does not list Drift-v0:\n${output}")
endif()

# d. The installed tdrl-eval loads the plugin that config.yaml records, without --plugin.
run(0 "${prefix}/bin/tdrl-eval" --run "${plugin_run}" --episodes 2)

# d0. An off-policy user algorithm (drift_dpg: the user's own loss with target networks, a
#     replay buffer, soft target updates and annealed exploration noise) trains through the
#     user's main and through the stock tool with the plugin, writing its loss terms as metrics
#     columns, and the stock tdrl-eval evaluates it.
set(dpg_config "${SOURCE_DIR}/drift_dpg.yaml")
run(0 "${drift_train}" --config "${dpg_config}" --set "logger.dir=${WORK_DIR}/runs_dpg_main")
run_folder("${WORK_DIR}/runs_dpg_main" dpg_main_run)
run(0 "${prefix}/bin/tdrl-train" --plugin "${plugin}" --config "${dpg_config}"
    --set "logger.dir=${WORK_DIR}/runs_dpg_plugin")
run_folder("${WORK_DIR}/runs_dpg_plugin" dpg_plugin_run)
file(STRINGS "${dpg_main_run}/metrics.csv" dpg_main_rows)
list(GET dpg_main_rows 0 dpg_header)
foreach(column loss_actor loss_value q_value)
  if(NOT dpg_header MATCHES "(^|,)${column}(,|$)")
    message(FATAL_ERROR "drift_dpg's metrics.csv has no ${column} column: ${dpg_header}")
  endif()
endforeach()
run(0 "${prefix}/bin/tdrl-eval" --run "${dpg_plugin_run}" --episodes 2)

# A refused run: tdrl-train exits with 2 (a config error), its message matches `pattern`, and no
# run folder (nor its parent `runs`) was created.
function(refused pattern runs)
  run(2 "${prefix}/bin/tdrl-train" --config "${config}" --set "logger.dir=${runs}" ${ARGN})
  if(NOT output MATCHES "${pattern}")
    message(FATAL_ERROR "the error does not match '${pattern}':\n${output}")
  endif()
  if(EXISTS "${runs}")
    message(FATAL_ERROR "a refused run created ${runs}")
  endif()
endfunction()

# d1. A plugin in a folder whose name YAML would misread (quotes, a comma, brackets) is
#     recorded as it is and loaded again from config.yaml.
set(odd_dir "${WORK_DIR}/odd \"dir\", it's [x]")
file(REMOVE_RECURSE "${odd_dir}")
file(COPY "${plugin}" DESTINATION "${odd_dir}")
get_filename_component(plugin_name "${plugin}" NAME)
run(0 "${prefix}/bin/tdrl-train" --plugin "${odd_dir}/${plugin_name}" --config "${config}"
    --set "logger.dir=${WORK_DIR}/runs_odd")
run_folder("${WORK_DIR}/runs_odd" odd_run)
run(0 "${prefix}/bin/tdrl-eval" --run "${odd_run}" --episodes 1)

# d2. A run whose recorded plugin moved: tdrl-eval names the config's line listing it and the fix,
#     and --plugin with the library's new path (the same file name) replaces the recorded one.
set(moved_run "${WORK_DIR}/moved_run")
file(REMOVE_RECURSE "${moved_run}")
file(COPY "${plugin_run}/" DESTINATION "${moved_run}")
file(READ "${moved_run}/config.yaml" moved_config)
get_filename_component(plugin_dir "${plugin}" DIRECTORY)
string(REPLACE "${plugin_dir}" "${WORK_DIR}/gone" moved_config "${moved_config}")
file(WRITE "${moved_run}/config.yaml" "${moved_config}")
run(2 "${prefix}/bin/tdrl-eval" --run "${moved_run}" --episodes 1)
if(NOT output MATCHES "'plugins' \\([^\n]*config.yaml line [0-9]+\\) lists [^\n]*gone[^\n]*: no such file[^\n]*--plugin NEW_PATH")
  message(FATAL_ERROR "the error does not name the config's line and the fix:\n${output}")
endif()
run(0 "${prefix}/bin/tdrl-eval" --run "${moved_run}" --episodes 1 --plugin "${plugin}")

# e. A value outside the user section's range is a config error, refused before the run
#    folder's parent is even created.
refused("algo.gamma" "${WORK_DIR}/runs_bad" --set algo.gamma=1.5 --plugin "${plugin}")

# e0. The user's loss declares its options once (DriftPGLossOptions::fields): a typo and a
#     value out of range in a config file are refused with the file and line, and the options
#     are in the config reference.
file(READ "${config}" good_config)
set(typo_yaml "${WORK_DIR}/typo.yaml")
foreach(case
    "advantage_std_flor: 0.1|unknown key 'algo.advantage_std_flor' \\([^\n]*typo.yaml line 14\\)[^\n]*did you mean 'algo.advantage_std_floor'"
    "advantage_std_floor: 0|'algo.advantage_std_floor' \\([^\n]*typo.yaml line 14\\) is 0; it must be > 0")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 line)
  list(GET case 1 pattern)
  string(REPLACE "  num_epochs: 2\n" "  num_epochs: 2\n  ${line}\n" bad_config "${good_config}")
  file(WRITE "${typo_yaml}" "${bad_config}")
  run(2 "${prefix}/bin/tdrl-train" --config "${typo_yaml}" --plugin "${plugin}"
    --set "logger.dir=${WORK_DIR}/runs_typo")
  if(NOT output MATCHES "${pattern}")
    message(FATAL_ERROR "'${line}' is not refused with its line and the fix:\n${output}")
  endif()
endforeach()
if(EXISTS "${WORK_DIR}/runs_typo")
  message(FATAL_ERROR "a refused run created ${WORK_DIR}/runs_typo")
endif()
run(0 "${prefix}/bin/tdrl-train" --config-reference --plugin "${plugin}")
if(NOT output MATCHES "`algo.advantage_std_floor` \\| float \\| `1e-06` \\| > 0 \\| the smallest std"
   OR NOT output MATCHES "## `env.name: Drift-v0`[^#]*`env.options.max_episode_steps` \\| int \\| `50` \\| >= 1")
  message(FATAL_ERROR "the config reference does not list the plugin's loss and env options:\n${output}")
endif()
# The user's env declares its task options (DriftEnvOptions::fields) the same way.
refused("'env.options.max_episode_steps' [^\n]* is 0; it must be >= 1" "${WORK_DIR}/runs_env_option"
  --set "env.options={max_episode_steps: 0}" --plugin "${plugin}")

# e1. The stock tdrl-train on the user's config without the plugin: a config error asking
#     whether the plugin was forgotten.
refused("'algo.name' [^\n]*did you forget --plugin\\?" "${WORK_DIR}/runs_no_plugin")

# e2. A plugin whose registration fails (it registers CartPole-v1 again) is a config error
#     naming the plugin and the name taken.
file(READ "${build}/taken_plugin_path.txt" taken_plugin)
refused("--plugin [^\n]*taken_plugin[^\n]*: its registration failed: [^\n]*'CartPole-v1' is already registered"
        "${WORK_DIR}/runs_taken" --plugin "${taken_plugin}")

# e3. A plugin built against another tdrl and LibTorch is refused before any of it runs, naming
#     both builds.
file(READ "${build}/mismatched_plugin_path.txt" mismatched_plugin)
refused("--plugin [^\n]*mismatched_plugin[^\n]*: built against tdrl 0.0.1, LibTorch 9.9[^\n]*but this program is built against tdrl [0-9]"
        "${WORK_DIR}/runs_mismatched" --plugin "${mismatched_plugin}")

# f. The user's env also trains with a built-in algorithm (drift_pg's keys are ppo's too).
run(0 "${drift_train}" --config "${config}" --set algo.name=ppo
    --set "logger.dir=${WORK_DIR}/runs_ppo")
run_folder("${WORK_DIR}/runs_ppo" ppo_run)
