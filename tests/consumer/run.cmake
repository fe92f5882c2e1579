# cmake -DBUILD_DIR=<cudalab build> -DSOURCE_DIR=<tests/consumer> -DWORK_DIR=<scratch> -P run.cmake
# Installs the built cudalab into WORK_DIR/prefix, configures and builds the consumer against it
# with find_package(cudalab), and runs it. Any failing step fails the test.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "consumer project: '${ARGN}' failed (${status})")
  endif()
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/cudalab_consumer)
