# Bakes the commit and dirty flag into the binary at build time (not configure time), so results
# carry the revision that was actually built. The build tree may later run elsewhere (the GPU
# machine), where there is no .git to ask.
set(CUDALAB_GIT_REVISION_SOURCE ${CMAKE_BINARY_DIR}/generated/git_revision.cpp)
add_custom_target(cudalab_git_revision
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUTPUT=${CUDALAB_GIT_REVISION_SOURCE}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitRevision.cmake
  BYPRODUCTS ${CUDALAB_GIT_REVISION_SOURCE}
  COMMENT "Recording git revision")
