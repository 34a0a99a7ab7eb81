# cmake/install.cmake — `cmake --install` and `cpack -G DEB`: where graphrun's files go.
#   bin/graphrun
#   share/graphrun/models/*.json, models/examples/*.json, models/kjv-q8_0.gguf   (the data folder)
#   share/doc/graphrun/README.md, docs/*.md, models/README.md                     (as Debian lays out docs)
# graphrun finds the data folder relative to its own executable (graph/data_files.h), so the tree
# can be installed under any prefix and moved as a whole.
include(GNUInstallDirs)

set(GRAPHRUN_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/graphrun")
# The data folder, as graph/data_files.cpp searches it: beside an installed executable (its folder +
# "../share/graphrun" by default), or this checkout for the executables of this build tree.
file(RELATIVE_PATH data_relative "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${GRAPHRUN_INSTALL_DATADIR}")
target_compile_definitions(graphrun_graph PRIVATE GRAPHRUN_INSTALL_DATA_RELATIVE="${data_relative}"
                           GRAPHRUN_SOURCE_DIR="${CMAKE_SOURCE_DIR}" GRAPHRUN_BUILD_DIR="${CMAKE_BINARY_DIR}")

# Installing (and cpack) takes what is built and builds nothing: without this, cpack's preinstall step
# would first build every target, tests and benchmarks included, which the package does not hold.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
install(TARGETS graphrun RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY models/ DESTINATION "${GRAPHRUN_INSTALL_DATADIR}/models" FILES_MATCHING PATTERN "*.json")
install(FILES models/kjv-q8_0.gguf DESTINATION "${GRAPHRUN_INSTALL_DATADIR}/models")
install(FILES README.md DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(DIRECTORY docs/ DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs" FILES_MATCHING PATTERN "*.md")
install(FILES models/README.md DESTINATION "${CMAKE_INSTALL_DOCDIR}/models")

# The Debian package: `cpack -G DEB` in the build folder writes graphrun_<version>_amd64.deb there.
# dpkg-shlibdeps (dpkg-dev) declares the runtime libraries the binary links (libtbb12, libicu72, ...).
set(CPACK_PACKAGE_NAME graphrun)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "graph-based inference engine for Llama-style language models on CPUs")
set(CPACK_PACKAGE_DESCRIPTION "graphrun runs GGUF models (F32, F16, Q8_0, Q4_0) from a static compute graph: \
a planner, a oneTBB executor and SIMD op kernels. It ships a small Llama trained on the King James Bible.")
set(CPACK_PACKAGE_CONTACT "graphrun developers")
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
# A package without its dependencies would install and then fail to start: refuse to write one.
set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_CURRENT_LIST_DIR}/cpack_checks.cmake")
include(CPack)
