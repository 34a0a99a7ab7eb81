# cmake/install.cmake — `cmake --install`: where graphrun's files go.
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

install(TARGETS graphrun RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY models/ DESTINATION "${GRAPHRUN_INSTALL_DATADIR}/models" FILES_MATCHING PATTERN "*.json")
install(FILES models/kjv-q8_0.gguf DESTINATION "${GRAPHRUN_INSTALL_DATADIR}/models")
install(FILES README.md DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(DIRECTORY docs/ DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs" FILES_MATCHING PATTERN "*.md")
install(FILES models/README.md DESTINATION "${CMAKE_INSTALL_DOCDIR}/models")
