#include "k3/tok/corpus_check.h"

#include <filesystem>
#include <simdjson.h>
#include <vector>

#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/tok/hf_tokenizer_json.h"
#include "k3/tok/id_text.h"

namespace k3::tok {

CheckReport checkCorpus(const Tokenizer& tok, const std::string& path) {
  if (!std::filesystem::exists(path)) fail(ErrorKind::Missing, path, ": corpus not found");
  // A regular file under the cap: a device or FIFO (/dev/zero) is not a corpus.
  const simdjson::padded_string text(readInputFile(path, kCorpusInput));
  CheckReport rep;
  rep.corpus = path;
  simdjson::dom::parser parser;
  std::string_view all(text.data(), text.size());
  size_t lineNo = 0;
  for (size_t pos = 0; pos < all.size();) {
    size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    std::string_view line = all.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::dom::element v;
    if (parser.parse(line.data(), line.size()).get(v)) fail(ErrorKind::Format, path, ": line ", lineNo, ": not JSON");
    std::string_view s;
    bool hasIds = false, allowSpecial = false;
    std::vector<uint32_t> expected;
    if (v.is_string()) {
      s = v.get_string().value_unsafe();
    } else {
      if (v["text"].get_string().get(s)) fail(ErrorKind::Format, path, ": line ", lineNo, ": no \"text\" string");
      simdjson::dom::array ids;
      if (!v["ids"].get_array().get(ids)) {
        hasIds = true;
        for (auto id : ids) {
          uint64_t x = 0;
          if (id.get_uint64().get(x) || x > UINT32_MAX) fail(ErrorKind::Format, path, ": line ", lineNo, ": bad id");
          expected.push_back(static_cast<uint32_t>(x));
        }
      }
      bool a = false;
      if (!v["allow_special"].get_bool().get(a)) allowSpecial = a;
    }
    ++rep.lines;
    std::vector<uint32_t> actual = tok.encode(s, allowSpecial);
    bool roundTrip = tok.decode(actual) == s;
    if (roundTrip) ++rep.roundTrips;
    bool idsOk = true;
    if (hasIds) {
      ++rep.withIds;
      idsOk = actual == expected;
      if (idsOk) ++rep.idsMatched;
    }
    if (!idsOk || !roundTrip) rep.mismatches.push_back({lineNo, std::string(s), expected, actual, !roundTrip});
  }
  return rep;
}

std::string checkReportText(const CheckReport& r) {
  std::string out;
  for (const CheckMismatch& m : r.mismatches) {
    out += cat(r.corpus, ":", m.line, ": ", m.roundTripFailed ? "round trip failed" : "ids differ", "\n");
    out += "  text:     " + toValidUtf8(m.text) + "\n";
    if (!m.expected.empty() || !m.roundTripFailed) out += "  expected: " + formatIds(m.expected, false) + "\n";
    out += "  actual:   " + formatIds(m.actual, false) + "\n";
  }
  out += cat(r.corpus, ": ", r.lines, " lines, ", r.idsMatched, "/", r.withIds, " with ids matched, ", r.roundTrips,
             "/", r.lines, " round trips, ", r.mismatches.size(), " failures\n");
  return out;
}

std::string checkReportJson(const CheckReport& r) {
  using Spacing = JsonObject::Spacing;
  std::vector<JsonObject> failures;
  for (const CheckMismatch& m : r.mismatches) {
    // The id arrays are compact ("[1,2]") inside the spaced object, as the
    // report has always printed them.
    JsonObject& row = failures.emplace_back(Spacing::Python);
    row.add("line", m.line).add("round_trip_failed", m.roundTripFailed);
    row.raw("expected", formatIds(m.expected, true)).raw("actual", formatIds(m.actual, true));
  }
  JsonObject o(Spacing::Python);
  o.add("corpus", r.corpus).add("lines", r.lines).add("with_ids", r.withIds).add("ids_matched", r.idsMatched);
  o.add("round_trips", r.roundTrips).add("failures", failures);
  return o.str() + "\n";
}

}  // namespace k3::tok
