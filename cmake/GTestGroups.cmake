# cudalab_add_gtest_groups(TARGET PREFIX prefix XML_DIR dir [LABELS label...] [RESOURCE_LOCK lock])
#
# Registers a GoogleTest executable with CTest as one test per group of cases, where
# gtest_discover_tests would register one process per case. Every process loads the whole library
# (tens of megabytes of kernels) before its first case, so a process per case made the test run
# thousands of process starts long; a group runs its cases in one process and reports each of them.
#
# A group is a test suite; a parameterized case whose name holds "__" joins the group named by
# what comes before it (Registry/EveryVariant.MatchesTheCpuReference/gemm__tiled__... is in the
# group ...MatchesTheCpuReference/gemm, one process per op). Groups are listed when CTest starts
# (the executable's --gtest_list_tests, cached until it is rebuilt), as gtest's PRE_TEST mode does,
# and named PREFIX<group>: host.Compare, gpu.Registry/EveryVariant.MatchesTheCpuReference/gemm.
#
# Each group writes a gtest XML report into XML_DIR/<group>.xml, which scripts/test-report sums
# up case by case. A group whose every case skipped (a GPU suite without a GPU) prints the line
# tests/gtest_main.cpp prints for it, and CTest reports the group as skipped.
function(cudalab_add_gtest_groups target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX;RESOURCE_LOCK;XML_DIR" "LABELS")
  set(base ${CMAKE_CURRENT_BINARY_DIR}/${target})
  string(CONCAT content
    "include([==[${PROJECT_SOURCE_DIR}/cmake/WriteGTestGroups.cmake]==])\n"
    "cudalab_write_gtest_groups(\n"
    "  EXECUTABLE [==[$<TARGET_FILE:${target}>]==]\n"
    "  CTEST_FILE [==[${base}_groups.cmake]==]\n"
    "  PREFIX [==[${arg_PREFIX}]==]\n"
    "  XML_DIR [==[${arg_XML_DIR}]==]\n"
    "  LABELS [==[${arg_LABELS}]==]\n"
    "  RESOURCE_LOCK [==[${arg_RESOURCE_LOCK}]==])\n"
    "include([==[${base}_groups.cmake]==])\n")
  file(GENERATE OUTPUT ${base}_include.cmake CONTENT "${content}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${base}_include.cmake)
endfunction()
