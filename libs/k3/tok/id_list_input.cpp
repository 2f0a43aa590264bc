#include "k3/tok/id_list_input.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3::tok {

namespace {

bool isSeparator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; }

// A character for an error line: printable ASCII as is, anything else as \xNN.
std::string shown(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string(1, c);
  char b[8];
  std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
  return b;
}

}  // namespace

std::vector<uint32_t> parseIds(std::string_view text, std::string_view origin, uint64_t vocabSize) {
  std::vector<uint32_t> ids;
  size_t i = 0;
  // After an id or a comma: a comma then needs an id before the next comma.
  bool idSinceComma = false, sawComma = false;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ',') {
      if (!idSinceComma) fail(ErrorKind::Usage, origin, ": empty token id before the comma at offset ", i);
      idSinceComma = false;
      sawComma = true;
      ++i;
      continue;
    }
    if (isSeparator(c) || c == '[' || c == ']') {
      if (c == ']' && sawComma && !idSinceComma)
        fail(ErrorKind::Usage, origin, ": empty token id after the comma before offset ", i);
      ++i;
      continue;
    }
    if (c < '0' || c > '9') fail(ErrorKind::Usage, origin, ": unexpected character '", shown(c), "' at offset ", i);
    const size_t at = i;
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + uint64_t(text[i] - '0');
      if (v > UINT32_MAX) fail(ErrorKind::Usage, origin, ": token id at offset ", at, " is too large");
      ++i;
    }
    if (vocabSize && v >= vocabSize)
      fail(ErrorKind::Usage, origin, ": token id ", v, " at offset ", at, " is outside the vocabulary [0, ",
           vocabSize, ")");
    ids.push_back(static_cast<uint32_t>(v));
    idSinceComma = true;
  }
  if (sawComma && !idSinceComma) fail(ErrorKind::Usage, origin, ": empty token id after the last comma");
  return ids;
}

std::vector<uint32_t> readIdList(const std::string& spec, std::string_view flag, uint64_t vocabSize) {
  std::string text;
  std::string origin(flag);
  std::error_code ec;
  try {
    if (spec == "-") {
      text = readStreamCapped(STDIN_FILENO, "<stdin>", kIdListInput);
      origin += " <stdin>";
    } else if (std::filesystem::exists(std::filesystem::symlink_status(spec, ec))) {
      text = readInputFile(spec, kIdListInput);  // refuses FIFOs, devices, directories, giants
      origin += " " + spec;
    } else if (spec.find_first_not_of("0123456789, \t\r\n[]") != std::string::npos &&
               spec.find_first_of("/.") != std::string::npos) {
      fail(ErrorKind::Usage, flag, ": '", spec, "' is neither a file nor a list of token ids");
    } else {
      text = spec;  // not a file: the list itself
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Usage) throw;
    throw Error(e.kind(), cat(flag, ": ", e.what()));
  }
  std::vector<uint32_t> ids = parseIds(text, origin, vocabSize);
  if (ids.empty()) fail(ErrorKind::Usage, origin, ": no token ids");
  return ids;
}

}  // namespace k3::tok
