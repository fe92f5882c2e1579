# cudalab_add_op(NAME LIBRARY files... HARNESS files... [HOPPER files...])
#
# Called from src/ops/<op>/CMakeLists.txt, so an op's files are listed once, in its own folder:
# LIBRARY files (kernels, launchers, the public library entry) go into cudalab_library, the
# installable libcudalab; HARNESS files (the op spec, its registration, claims, experiments,
# vendor baselines that need the harness) go into cudalab_harness, whose registry calls the op's
# register_NAME(Registry&) (the list is generated, in folder order).
function(cudalab_add_op name)
  cmake_parse_arguments(PARSE_ARGV 1 op "" "" "LIBRARY;HARNESS;HOPPER")
  if(op_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cudalab_add_op(${name}): unexpected arguments ${op_UNPARSED_ARGUMENTS}")
  endif()
  list(TRANSFORM op_LIBRARY PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  list(TRANSFORM op_HARNESS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  target_sources(cudalab_library PRIVATE ${op_LIBRARY})
  if(TARGET cudalab_harness)
    target_sources(cudalab_harness PRIVATE ${op_HARNESS})
  endif()
  set_property(GLOBAL APPEND PROPERTY CUDALAB_OPS ${name})
  # HOPPER files (wgmma, TMA) use instructions that exist only in arch-specific sm_90a code: when the
  # build targets Hopper they compile as their own object library for 90a (and run only on compute
  # capability 9.0), machine code alone: arch-specific PTX could be compiled for no other GPU, and it
  # made a third of the binaries' GPU code. Otherwise as plain library files whose limits say they
  # were not built.
  if(op_HOPPER)
    list(TRANSFORM op_HOPPER PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
    if(CMAKE_CUDA_ARCHITECTURES MATCHES "(^|;)90")
      add_library(cudalab_${name}_sm90a OBJECT ${op_HOPPER})
      set_target_properties(cudalab_${name}_sm90a PROPERTIES CUDA_ARCHITECTURES 90a-real)
      target_include_directories(cudalab_${name}_sm90a PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
      target_compile_definitions(cudalab_${name}_sm90a PRIVATE CUDALAB_SM90A=1)
      target_sources(cudalab_library PRIVATE $<TARGET_OBJECTS:cudalab_${name}_sm90a>)
    else()
      target_sources(cudalab_library PRIVATE ${op_HOPPER})
    endif()
  endif()
endfunction()

# An op folder without a CMakeLists.txt: its register, reference, inputs and claims files go into
# the harness, every other .cpp and .cu file into the library (no sm_90a files: those need the
# HOPPER list of a CMakeLists.txt).
function(cudalab_add_op_folder folder)
  get_filename_component(name ${folder} NAME)
  file(GLOB sources CONFIGURE_DEPENDS RELATIVE ${folder} ${folder}/*.cpp ${folder}/*.cu)
  set(harness ${sources})
  list(FILTER harness INCLUDE REGEX "^(register|reference|inputs|claims)\\.(cpp|cu)$")
  set(library ${sources})
  list(FILTER library EXCLUDE REGEX "^(register|reference|inputs|claims)\\.(cpp|cu)$")
  list(TRANSFORM harness PREPEND ${folder}/)
  list(TRANSFORM library PREPEND ${folder}/)
  target_sources(cudalab_library PRIVATE ${library})
  if(TARGET cudalab_harness)
    target_sources(cudalab_harness PRIVATE ${harness})
  endif()
  set_property(GLOBAL APPEND PROPERTY CUDALAB_OPS ${name})
endfunction()
