# The test-time half of GTestGroups.cmake: CTest includes this, through the file
# cudalab_add_gtest_groups generates, before it runs anything.
cmake_policy(VERSION 3.25)  # CTest reads its files under the oldest policies (IN_LIST, ZIP_LISTS)

# The line tests/gtest_main.cpp prints when every case a process ran was skipped.
set(CUDALAB_EVERY_CASE_SKIPPED "cudalab-tests: every case skipped")

# cudalab_gtest_groups(EXECUTABLE NAMES_VAR FILTERS_VAR): the executable's groups (see
# GTestGroups.cmake) and, in the same order, the --gtest_filter that runs each one.
function(cudalab_gtest_groups executable names_var filters_var)
  execute_process(COMMAND ${executable} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE status
                  ERROR_VARIABLE errors TIMEOUT 120)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${executable} --gtest_list_tests failed (${status}): ${errors}")
  endif()
  # A printed parameter may hold a list separator, or brackets (CMake splits no list inside them).
  string(REPLACE ";" "," listing "${listing}")
  string(REPLACE "[" "(" listing "${listing}")
  string(REPLACE "]" ")" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(names "")
  set(suite "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")  # "Suite." or "Prefix/Suite.  # TypeParam = ..."
      set(suite ${CMAKE_MATCH_1})
      set(split_${suite} FALSE)
    elseif(line MATCHES "^  ([^ ]+)")
      set(test ${CMAKE_MATCH_1})
      string(FIND "${test}" "__" cut)
      if(cut GREATER 0)
        string(SUBSTRING "${test}" 0 ${cut} head)
        set(name "${suite}.${head}")
        set(filter_${name} "${name}__*")
        set(split_${suite} TRUE)
      else()
        set(name "${suite}")
        set(filter_${name} "${suite}.*")
      endif()
      if(NOT name IN_LIST names)
        list(APPEND names "${name}")
      endif()
    endif()
  endforeach()
  set(filters "")
  foreach(name IN LISTS names)
    set(filter "${filter_${name}}")
    # A suite's own group leaves out the cases that went to groups of their own.
    if(DEFINED split_${name} AND split_${name})
      string(APPEND filter "-${name}.*__*")
    endif()
    list(APPEND filters "${filter}")
  endforeach()
  set(${names_var} "${names}" PARENT_SCOPE)
  set(${filters_var} "${filters}" PARENT_SCOPE)
endfunction()

# cudalab_write_gtest_groups(EXECUTABLE exe CTEST_FILE file PREFIX p XML_DIR dir LABELS l
#                            RESOURCE_LOCK lock): writes the add_test lines of exe's groups into
# CTEST_FILE, unless that file is newer than the executable and this script.
function(cudalab_write_gtest_groups)
  cmake_parse_arguments(arg "" "EXECUTABLE;CTEST_FILE;PREFIX;XML_DIR;RESOURCE_LOCK" "LABELS" ${ARGN})
  if(NOT EXISTS "${arg_EXECUTABLE}")
    file(WRITE "${arg_CTEST_FILE}" "add_test([==[${arg_PREFIX}NOT_BUILT]==] [==[${arg_EXECUTABLE}]==])\n")
    return()
  endif()
  if(EXISTS "${arg_CTEST_FILE}" AND "${arg_CTEST_FILE}" IS_NEWER_THAN "${arg_EXECUTABLE}"
     AND "${arg_CTEST_FILE}" IS_NEWER_THAN "${CMAKE_CURRENT_FUNCTION_LIST_FILE}")
    return()
  endif()
  cudalab_gtest_groups("${arg_EXECUTABLE}" names filters)
  set(script "")
  foreach(name filter IN ZIP_LISTS names filters)
    set(test "${arg_PREFIX}${name}")
    string(MAKE_C_IDENTIFIER "${test}" report)
    string(APPEND script
      "add_test([==[${test}]==] [==[${arg_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==] "
      "[==[--gtest_output=xml:${arg_XML_DIR}/${report}.xml]==])\n"
      "set_tests_properties([==[${test}]==] PROPERTIES SKIP_REGULAR_EXPRESSION [==[${CUDALAB_EVERY_CASE_SKIPPED}]==]")
    if(arg_LABELS)
      string(APPEND script " LABELS [==[${arg_LABELS}]==]")
    endif()
    if(arg_RESOURCE_LOCK)
      string(APPEND script " RESOURCE_LOCK [==[${arg_RESOURCE_LOCK}]==]")
    endif()
    string(APPEND script ")\n")
  endforeach()
  file(WRITE "${arg_CTEST_FILE}" "${script}")
endfunction()
