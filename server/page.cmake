# server/page.cmake — compiles server/page.html into the binary as kPageHtml, so an installed
# graphrun serves its page with no file to find. Run by CMake with -DINPUT= -DOUTPUT=.
file(READ "${INPUT}" page)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from server/page.html by server/page.cmake; edit the page, not this file.\n"
  "#include \"server/routes.h\"\n"
  "namespace graphrun::server {\n"
  "const char* const kPageHtml = R\"graphrun_page(${page})graphrun_page\";\n"
  "}  // namespace graphrun::server\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
