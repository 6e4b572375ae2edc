# gmux_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# One cmocka binary per module, registered with CTest. Exit 77 means skipped
# (a GPU test on a machine without a GPU).
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

function(gmux_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  target_link_libraries(${name} PRIVATE gmux_test_support PkgConfig::CMOCKA ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77)
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# gmux_add_fuzzer(NAME SOURCES ... [LIBS ...] [CORPUS dir...] [MIN_COVERAGE n])
# With GMUX_FUZZ (clang): a libFuzzer binary NAME. Always: NAME_replay, the
# same harness driven by tests/fuzz/replay.c over the checked-in corpus plus
# seeded random mutations, registered as a CTest test so every build runs it.
# CORPUS may name several folders (the seeds, then inputs a campaign found).
function(gmux_add_fuzzer name)
  cmake_parse_arguments(F "" "MIN_COVERAGE" "SOURCES;LIBS;CORPUS" ${ARGN})
  add_executable(${name}_replay ${F_SOURCES} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay.c)
  target_link_libraries(${name}_replay PRIVATE ${F_LIBS})
  target_include_directories(${name}_replay PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  add_test(NAME ${name}_replay COMMAND ${name}_replay ${F_CORPUS})
  set_tests_properties(${name}_replay PROPERTIES TIMEOUT 120 LABELS fuzz)
  if(GMUX_FUZZ)
    if(NOT TARGET fuzzers)
      add_custom_target(fuzzers)
    endif()
    add_executable(${name} ${F_SOURCES})
    add_dependencies(fuzzers ${name})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE ${F_LIBS})
    # NAME_coverage (fuzz builds): fails when the seed corpus reaches fewer
    # than n edges, as it does when the code under test is not instrumented
    if(F_MIN_COVERAGE)
      add_test(NAME ${name}_coverage
               COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/coverage_check.sh $<TARGET_FILE:${name}>
                       ${F_MIN_COVERAGE} ${F_CORPUS})
      set_tests_properties(${name}_coverage PROPERTIES TIMEOUT 120 LABELS fuzz)
    endif()
  endif()
endfunction()
