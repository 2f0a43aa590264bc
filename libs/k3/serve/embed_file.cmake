# cmake -DINPUT=file -DOUTPUT=file.cpp -DNAMESPACE=ns -DFUNCTION=name -P embed_file.cmake
# Writes a .cpp defining `std::string_view ns::name()` over the file's bytes.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
math(EXPR bytes "${n} / 2")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by embed_file.cmake; do not edit.\n"
  "#include <string_view>\n"
  "namespace ${NAMESPACE} {\n"
  "namespace { const char kBytes[${bytes} + 1] = {${body} 0}; }\n"
  "std::string_view ${FUNCTION}() { return {kBytes, ${bytes}}; }\n"
  "}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
