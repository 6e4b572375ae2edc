# Warnings and sanitizers for every C (and CUDA) target of the project.
set(GMUX_WARNINGS -Wall -Wextra -Wformat=2 -Wvla -Wmissing-prototypes -Wstrict-prototypes)
if(GMUX_WERROR)
  list(APPEND GMUX_WARNINGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C>:${GMUX_WARNINGS}>")
# CUDA sources: nvcc hands the host code to g++ with the same warnings
# (-Wmissing-declarations is C++'s -Wmissing-prototypes; -Wstrict-prototypes
# is C only). nvcc's own front-end warnings (device code, e.g. #177-D, an
# unused variable) are on by default; -Werror=all-warnings makes those, and
# the host compiler's, errors. -Wdefault-stream-launch: a <<<>>> launch that
# names no stream runs on the legacy default stream, which serialises with
# every blocking stream (a kernel spinning on proxy progress there can wait on
# a copy queued behind it); a launch meant for it says 0. Left off: -Wreorder
# and -Wext-lambda-captures-this (no constructors, no extended lambdas here;
# g++ -Wall has -Wreorder for host code) and -Wmissing-launch-bounds (no
# kernel states bounds it was tuned for).
set(GMUX_CUDA_WARNINGS -Xcompiler=-Wall,-Wextra,-Wformat=2,-Wvla,-Wmissing-declarations
                       -Wdefault-stream-launch)
if(GMUX_WERROR)
  list(APPEND GMUX_CUDA_WARNINGS -Werror=all-warnings)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:${GMUX_CUDA_WARNINGS}>")
# A Debug build debugs the device code too: -G (no device optimisation, device
# debug information), as the host code is -O0 -g. Kernels run much slower
# there; figures come from RelWithDebInfo or Release builds.
add_compile_options("$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<CONFIG:Debug>>:-G>")
add_compile_definitions(_GNU_SOURCE)

if(GMUX_SANITIZE STREQUAL "address")
  set(GMUX_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                     -fno-omit-frame-pointer)
elseif(GMUX_SANITIZE STREQUAL "thread")
  set(GMUX_SAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT GMUX_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GMUX_SANITIZE must be empty, 'address' or 'thread', not '${GMUX_SANITIZE}'")
endif()
if(GMUX_SAN_FLAGS)
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:${GMUX_SAN_FLAGS}>")
  add_link_options(${GMUX_SAN_FLAGS})
endif()

# ASan's stack-use-after-return check, off by default, on in every executable
# of an ASan or fuzz build: cmake/asan_options.c gives the runtime
# detect_stack_use_after_return=1 as a default option (gcc 12 has no
# -fsanitize-address-use-after-return=always). A default, not ASAN_OPTIONS, so
# that it holds in every child a test starts, those given an ASAN_OPTIONS of
# their own included, and a user's ASAN_OPTIONS adds to it. Added to each
# executable (one object, compiled once) when the whole tree is configured (deferred to the end of the top
# directory), save those with the target property GMUX_NO_ASAN_OPTIONS (test
# probes standing for programs that are not ours); libraries are left alone
# except libgmux.so, which adds it itself (src/shim/CMakeLists.txt).
function(gmux_add_asan_options_in dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(without ${t} GMUX_NO_ASAN_OPTIONS)
    if(type STREQUAL "EXECUTABLE" AND NOT without)
      target_sources(${t} PRIVATE $<TARGET_OBJECTS:gmux_asan_options>)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    gmux_add_asan_options_in(${sub})
  endforeach()
endfunction()
if(GMUX_SANITIZE STREQUAL "address" OR GMUX_FUZZ)
  add_library(gmux_asan_options OBJECT ${PROJECT_SOURCE_DIR}/cmake/asan_options.c)
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL gmux_add_asan_options_in
                 ${PROJECT_SOURCE_DIR})
endif()

if(GMUX_FUZZ AND NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "GMUX_FUZZ needs clang (configure with CC=clang)")
endif()
# A fuzz build instruments every C file, not only the harnesses: libFuzzer is
# guided by the coverage of the code under test, which lives in the project's
# libraries (with the harness alone instrumented, fuzz_calib saw 3 edges).
# Only the fuzzers are built there (`make fuzz`, target `fuzzers`). A UBSan
# report aborts, as in check-asan: recovered, it is a line in the log that
# libFuzzer neither stops at nor saves an input for (fuzz_rdv printed one on
# its committed corpus through a whole campaign that reported nothing).
if(GMUX_FUZZ)
  set(GMUX_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:${GMUX_FUZZ_FLAGS}>")
  add_link_options(-fsanitize=fuzzer-no-link,address,undefined)
endif()

# Source-based coverage (`make coverage`, scripts/coverage.sh, build-cov/):
# every C file, programs and libraries alike, carries clang's counters and
# mapping. Each process's counts go to BUILD/prof, one pool of files per
# program or library (%4m), also where a test gives a child an environment of
# its own. Continuous mode (%c, with the counters relocated at run time, as
# Linux needs) keeps the counts in the file as they change: a process ended
# by a signal (a daemon a test kills, a rank gmux launch stops) is counted;
# written at exit only, gmuxd's and the ranks' counts were lost.
if(GMUX_COVERAGE)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GMUX_COVERAGE needs clang (configure with CC=clang)")
  endif()
  if(NOT GMUX_CUDA STREQUAL "OFF")
    message(FATAL_ERROR "GMUX_COVERAGE builds the C parts only: configure with GMUX_CUDA=OFF")
  endif()
  set(GMUX_COV_FILE -fprofile-instr-generate=${PROJECT_BINARY_DIR}/prof/%c%4m.profraw)
  add_compile_options(${GMUX_COV_FILE} -fcoverage-mapping "SHELL:-mllvm -runtime-counter-relocation")
  add_link_options(${GMUX_COV_FILE})
endif()
