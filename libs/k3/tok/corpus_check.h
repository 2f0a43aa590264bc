// Corpus check for `k3-tokgen --check`: encodes each line of a JSON-lines
// corpus with our encoder and compares against ids given in the file
// (`{"text": ..., "ids": [...], "allow_special": bool}`); plain string lines
// (no ids) only check that decode(encode(x)) == x.
// Thread-safety: pure over a const Tokenizer; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "k3/tok/tokenizer.h"

namespace k3::tok {

struct CheckMismatch {
  size_t line = 0;
  std::string text;
  std::vector<uint32_t> expected, actual;
  bool roundTripFailed = false;
};

struct CheckReport {
  std::string corpus;
  size_t lines = 0, withIds = 0, idsMatched = 0, roundTrips = 0;
  std::vector<CheckMismatch> mismatches;
  bool failed() const { return !mismatches.empty(); }
};

CheckReport checkCorpus(const Tokenizer& tok, const std::string& corpusPath);
std::string checkReportText(const CheckReport& r);
std::string checkReportJson(const CheckReport& r);

}  // namespace k3::tok
