#include "k3/model/generation_defaults.h"

#include <simdjson.h>

#include <filesystem>
#include <random>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3::model {

namespace {

using simdjson::dom::element;

double numberField(element v, const std::string& path, std::string_view key, double lo, double hi) {
  double x = 0;
  int64_t i = 0;
  uint64_t u = 0;
  if (!v.get_double().get(x)) {
  } else if (!v.get_int64().get(i)) {
    x = static_cast<double>(i);
  } else if (!v.get_uint64().get(u)) {
    x = static_cast<double>(u);
  } else {
    fail(ErrorKind::Config, path, ": ", key, " must be a number");
  }
  if (!(x >= lo && x <= hi)) fail(ErrorKind::Config, path, ": ", key, " ", x, " must be in [", lo, ", ", hi, "]");
  return x;
}

}  // namespace

GenerationDefaults parseGenerationDefaults(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(json.data(), json.size(), true).get(root))
    fail(ErrorKind::Config, path, ": not valid JSON (", simdjson::error_message(err), ")");
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) fail(ErrorKind::Config, path, ": not a JSON object");
  GenerationDefaults d;
  d.source = "generation_config.json";
  bool sample = true;
  for (auto [k, v] : obj) {
    if (v.is_null()) continue;
    if (k == "temperature") {
      d.sampling.temperature = static_cast<float>(numberField(v, path, k, 0.0, kMaxTemperature));
    } else if (k == "top_p") {
      d.sampling.topP = static_cast<float>(numberField(v, path, k, 0.0, 1.0));
    } else if (k == "min_p") {
      d.sampling.minP = static_cast<float>(numberField(v, path, k, 0.0, 1.0));
    } else if (k == "top_k") {
      int64_t t = 0;
      if (v.get_int64().get(t) || t < 0 || t > kMaxTopK)
        fail(ErrorKind::Config, path, ": top_k must be an integer in [0, ", kMaxTopK, "]");
      d.sampling.topK = static_cast<int>(t);
    } else if (k == "do_sample") {
      if (v.get_bool().get(sample)) fail(ErrorKind::Config, path, ": do_sample must be true or false");
    }
  }
  if (!sample) d.sampling.temperature = 0.0f;  // HF: do_sample false is greedy whatever the temperature
  return d;
}

GenerationDefaults readGenerationDefaults(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  return parseGenerationDefaults(readInputFile(path, kConfigInput), path);
}

uint64_t drawSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

}  // namespace k3::model
