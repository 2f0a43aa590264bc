// Shared helpers of the model tests: repacked synthetic containers (cached
// under testTmp, safe when several test processes ask at once), the numpy
// reference's logits, and in-process teacher-forced runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "k3/format/safetensors_file.h"
#include "k3/model/model_weights.h"
#include "k3/model/session.h"
#include "support/test_env.h"

namespace k3test::model {

namespace fs = std::filesystem;

// Builds `target` once with make(tmpDir); concurrent callers race on an atomic
// rename, the loser throws its copy away.
inline std::string cachedDir(const std::string& target, const std::function<void(const std::string&)>& make) {
  if (fs::exists(target)) return target;
  fs::create_directories(fs::path(target).parent_path());
  const std::string tmp = target + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  make(tmp);
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) fs::remove_all(tmp);
  return target;
}

// synthSnapshot(preset, seed) repacked with `--bits bits` (+ extra flags).
inline std::string container(const std::string& preset, int bits, uint64_t seed = 1,
                             const std::vector<std::string>& extra = {}) {
  std::string tag = preset + "-s" + std::to_string(seed) + "-b" + std::to_string(bits);
  for (const auto& e : extra) tag += e;
  const std::string src = synthSnapshot(preset, seed);
  return cachedDir(testTmp() + "/model-containers/" + tag, [&](const std::string& out) {
    std::vector<std::string> args = {src, out, "--bits", std::to_string(bits)};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = runTool("k3-repack", args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  });
}

inline std::string idsText(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(ids[i]);
  }
  return s;
}

// Reproducible "text": ids drawn from the ordinary (rank) vocabulary.
inline std::vector<int32_t> testIds(size_t n, uint32_t vocabBase, uint32_t seed = 5) {
  std::vector<int32_t> ids;
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ids.push_back(static_cast<int32_t>((x >> 33) % vocabBase));
  }
  return ids;
}

inline std::vector<float> readF32(const std::string& path) {
  const std::string bytes = readFile(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// scripts/k3_ref.py logits [positions × vocab] from the SOURCE snapshot.
inline std::vector<float> referenceLogits(const std::string& preset, uint64_t seed, const std::vector<int32_t>& ids) {
  const std::string dir = freshDir("k3ref");
  const std::string out = dir + "/ref.f32";
  RunResult r = run({"/usr/bin/python3", sourceDir() + "/scripts/k3_ref.py", synthSnapshot(preset, seed), "--ids",
                     idsText(ids), "--out", out});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return readF32(out);
}

inline double relL2(const float* a, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

inline size_t argmaxOf(const float* v, size_t n) {
  size_t b = 0;
  for (size_t i = 1; i < n; ++i)
    if (v[i] > v[b]) b = i;
  return b;
}

struct Agreement {
  double maxRel = 0, meanRel = 0, argmax = 0;
};
inline Agreement compare(const std::vector<float>& got, const std::vector<float>& ref, size_t V) {
  Agreement a;
  const size_t P = ref.size() / V;
  EXPECT_EQ(got.size(), ref.size());
  if (got.size() != ref.size() || P == 0) return a;
  size_t same = 0;
  for (size_t p = 0; p < P; ++p) {
    const double r = relL2(&got[p * V], &ref[p * V], V);
    a.maxRel = std::max(a.maxRel, r);
    a.meanRel += r / static_cast<double>(P);
    same += argmaxOf(&got[p * V], V) == argmaxOf(&ref[p * V], V);
  }
  a.argmax = static_cast<double>(same) / static_cast<double>(P);
  return a;
}

// Teacher-forced logits of every position, in process.
inline std::vector<float> teacherForced(const k3::model::ModelWeights& w, const std::vector<int32_t>& ids,
                                        size_t chunk, size_t threads = 2, uint64_t expertBudget = 0,
                                        size_t feedStep = 0) {
  k3::model::SessionOptions o;
  o.chunk = chunk;
  o.threads = threads;
  o.expertBudget = expertBudget;
  o.maxContext = ids.size() + 8;
  k3::model::Session s(w, o);
  const size_t V = static_cast<size_t>(w.config().vocabSize);
  std::vector<float> out(ids.size() * V);
  if (feedStep == 0) feedStep = ids.size();
  for (size_t b = 0; b < ids.size(); b += feedStep) {
    const size_t n = std::min(feedStep, ids.size() - b);
    s.feed(std::span<const int32_t>(ids).subspan(b, n), out.data() + b * V);
  }
  return out;
}

// A copy of `src` whose lm_head row for `target` is twice the row of the
// token the model predicts first, so the model predicts `target` instead
// (2·l > l for the positive top logit).
inline std::string containerPredicting(const std::string& src, int32_t firstToken, int32_t target, const std::string& tag) {
  const std::string dir = freshDir(tag) + "/c";
  fs::copy(src, dir, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    const auto f = k3::SafetensorsFile::open(e.path().string(), k3::SafetensorsFile::Access::HeaderOnly);
    for (const auto& t : f.tensors()) {
      if (t.name.size() < 14 || t.name.compare(t.name.size() - 14, 14, "lm_head.weight") != 0) continue;
      EXPECT_EQ(t.dtype, k3::Dtype::BF16);
      const uint64_t D = t.shape[1], base = f.dataOffset() + t.begin;
      std::fstream io(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      std::vector<uint16_t> row(D);
      io.seekg(static_cast<std::streamoff>(base + static_cast<uint64_t>(firstToken) * D * 2));
      io.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(D * 2));
      for (auto& h : row) {
        const uint16_t exp = (h >> 7) & 0xff;
        if (exp != 0 && exp < 0xfe) h = static_cast<uint16_t>(h + 0x80);  // ×2, exact
      }
      io.seekp(static_cast<std::streamoff>(base + static_cast<uint64_t>(target) * D * 2));
      io.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(D * 2));
      return dir;
    }
  }
  ADD_FAILURE() << "no lm_head.weight in " << src;
  return dir;
}

}  // namespace k3test::model
