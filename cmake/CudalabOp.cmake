# cudalab_add_op(NAME LIBRARY files... HARNESS files...)
#
# Called from src/ops/<op>/CMakeLists.txt, so an op's files are listed once, in its own folder:
# LIBRARY files (kernels, launchers, the public library entry) go into cudalab_library, the
# installable libcudalab; HARNESS files (the op spec, its registration, claims, experiments,
# vendor baselines that need the harness) go into cudalab_harness.
function(cudalab_add_op name)
  cmake_parse_arguments(PARSE_ARGV 1 op "" "" "LIBRARY;HARNESS")
  if(op_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cudalab_add_op(${name}): unexpected arguments ${op_UNPARSED_ARGUMENTS}")
  endif()
  list(TRANSFORM op_LIBRARY PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  list(TRANSFORM op_HARNESS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  target_sources(cudalab_library PRIVATE ${op_LIBRARY})
  target_sources(cudalab_harness PRIVATE ${op_HARNESS})
endfunction()
