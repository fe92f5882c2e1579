# cmake -DBUILD_DIR=<build> -DHOST_TESTS=<cudalab_host_tests> -DMAX_PROCESSES=N -DMAX_HOST_MIB=M -P check_test_budget.cmake
# Fails when the test run starts more than MAX_PROCESSES processes (its CTest tests) or when the
# host tests' executable, which every host group loads before its first case, passes MAX_HOST_MIB.
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} -N --test-dir ${BUILD_DIR} OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT listing MATCHES "Total Tests: ([0-9]+)")
  message(FATAL_ERROR "ctest -N failed (${status}): ${listing}")
endif()
set(processes ${CMAKE_MATCH_1})
file(SIZE ${HOST_TESTS} bytes)
math(EXPR mib "${bytes} / 1048576")
message(STATUS "${processes} test processes (at most ${MAX_PROCESSES}); host tests ${mib} MiB (at most ${MAX_HOST_MIB})")
if(processes GREATER MAX_PROCESSES)
  message(FATAL_ERROR "${processes} test processes, over the budget of ${MAX_PROCESSES}: group new cases into "
                      "existing suites, or a parameterized suite's cases by a \"__\" in their names (cmake/GTestGroups.cmake)")
endif()
if(mib GREATER MAX_HOST_MIB)
  message(FATAL_ERROR "${HOST_TESTS} is ${mib} MiB, over the budget of ${MAX_HOST_MIB} MiB: every host group loads it")
endif()
