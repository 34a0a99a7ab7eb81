# cmake/cpack_checks.cmake — read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE).
# CPack quietly writes a .deb with no Depends when dpkg-shlibdeps is missing; stop instead.
if(CPACK_GENERATOR STREQUAL "DEB")
  foreach(tool IN ITEMS dpkg-shlibdeps file)
    find_program(found_${tool} ${tool})
    if(NOT found_${tool})
      message(FATAL_ERROR "cpack -G DEB: '${tool}' is not installed, so the package could not declare the "
                          "libraries it needs (apt-get install dpkg-dev file)")
    endif()
  endforeach()
endif()
