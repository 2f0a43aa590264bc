#include "k3/format/spread_layout.h"

#include <simdjson.h>
#include <sys/stat.h>

#include <filesystem>

#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"

namespace fs = std::filesystem;

namespace k3 {
namespace {

constexpr InputCap kMarkerInput{"spread marker", uint64_t{1} << 16};

bool isDirectory(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

bool isSpreadRootPath(std::string_view root) {
  if (root.empty() || root.size() > 4096 || root.front() == '/' || root.back() == '/' || root == ".")
    return false;
  size_t start = 0;
  while (start <= root.size()) {
    const size_t end = std::min(root.find('/', start), root.size());
    const std::string_view part = root.substr(start, end - start);
    if (part.empty() || part == ".") return false;
    if (part.find('\0') != std::string_view::npos) return false;
    start = end + 1;
  }
  return true;
}

std::string spreadLocation(std::string_view root, std::string_view file) {
  if (root == "." || root.empty()) return std::string(file);
  return cat(root, "/", file);
}

namespace {
constexpr std::string_view kShardExt = ".safetensors";
constexpr std::string_view kPartTag = ".part";
}  // namespace

std::string spreadPartName(const std::string& shardName, int part) {
  if (part == 0) return shardName;
  const std::string stem = shardName.substr(0, shardName.size() - kShardExt.size());
  return cat(stem, kPartTag, part + 1, kShardExt);
}

std::string spreadPartShard(std::string_view file) {
  if (file.size() <= kShardExt.size() || file.substr(file.size() - kShardExt.size()) != kShardExt) return "";
  const std::string_view stem = file.substr(0, file.size() - kShardExt.size());
  const size_t tag = stem.rfind(kPartTag);
  if (tag == std::string_view::npos || tag + kPartTag.size() == stem.size()) return "";
  for (char c : stem.substr(tag + kPartTag.size()))
    if (c < '0' || c > '9') return "";
  return cat(stem.substr(0, tag), kShardExt);
}

int spreadPartOf(size_t position, size_t count, int parts) {
  return count ? static_cast<int>(position * static_cast<size_t>(parts) / count) : 0;
}

int spreadRootOf(int shardNumber, int part, int roots) { return (shardNumber - 1 + part) % roots; }

std::vector<std::string> parseSpreadDirs(const std::string& list, const char* flag) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(list.find(',', start), list.size());
    if (end == start) fail(ErrorKind::Usage, flag, " '", list, "': empty directory name");
    out.push_back(list.substr(start, end - start));
    if (end == list.size()) break;
    start = end + 1;
  }
  if (out.size() + 1 > kMaxSpreadRoots) fail(ErrorKind::Usage, flag, ": more than ", kMaxSpreadRoots - 1, " directories");
  return out;
}

std::string relativeRootPath(const std::string& dst, const std::string& dir) {
  // weakly: k3-repack --dry-run records them before either exists.
  const fs::path d = fs::weakly_canonical(fs::absolute(dst)), r = fs::weakly_canonical(fs::absolute(dir));
  if (r == d) fail(ErrorKind::Usage, dir, ": a --spread directory must not be DST itself");
  const fs::path rel = r.lexically_relative(d);
  if (rel.empty() || *rel.begin() != "..")
    fail(ErrorKind::Usage, dir, ": a --spread directory must not lie inside DST (", dst, ")");
  return rel.string();
}

SpreadMarker SpreadMarker::forRoot(const ExpertManifest& m, int root) {
  return {m.configSha256, m.settings, root, static_cast<int>(m.roots.size())};
}

std::string SpreadMarker::toJson() const {
  return cat("{\"format\": \"k3-spread-root\", \"config_sha256\": \"", configSha256, "\", \"settings\": {\"bits\": ",
             settings.bits, ", \"mla_bits\": ", settings.mlaBits, ", \"head_bits\": ", settings.headBits,
             "}, \"root\": ", root, ", \"roots\": ", roots, "}\n");
}

SpreadMarker SpreadMarker::parse(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::object o;
  if (parser.parse(padded).get_object().get(o)) fail(ErrorKind::Format, path, ": not a JSON object");
  auto bad = [&](const char* key) -> void { fail(ErrorKind::Format, path, ": ", key, ": missing or malformed"); };
  std::string_view format, sha;
  if (o["format"].get_string().get(format) || format != "k3-spread-root") bad("format");
  if (o["config_sha256"].get_string().get(sha)) bad("config_sha256");
  auto integer = [&](simdjson::dom::element e, const char* key) {
    uint64_t v = 0;
    if (e.get_uint64().get(v) || v > kMaxSpreadRoots * 1024) bad(key);
    return static_cast<int>(v);
  };
  SpreadMarker m;
  m.configSha256 = std::string(sha);
  simdjson::dom::object s;
  if (o["settings"].get_object().get(s)) bad("settings");
  m.settings = {integer(s["bits"], "settings.bits"), integer(s["mla_bits"], "settings.mla_bits"),
                integer(s["head_bits"], "settings.head_bits")};
  m.root = integer(o["root"], "root");
  m.roots = integer(o["roots"], "roots");
  return m;
}

std::vector<std::string> resolveSpreadRoots(const std::string& dst, const ExpertManifest& m,
                                            const std::vector<std::string>& overrides) {
  const size_t n = m.roots.size();
  if (!overrides.empty() && overrides.size() + 1 != n)
    fail(ErrorKind::Usage, "--spread: ", overrides.size(), " directories given, but ", dst,
         " is spread over ", n, " (DST and ", n - 1, " more)");
  std::vector<std::string> dirs{dst};
  for (size_t k = 1; k < n; ++k) {
    const bool given = !overrides.empty();
    const std::string dir = given ? overrides[k - 1] : (fs::path(dst) / m.roots[k]).string();
    if (!isDirectory(dir))
      fail(ErrorKind::Missing, dir, ": spread root ", k, " of ", dst,
           given ? " (from --spread)" : cat(" (recorded as '", m.roots[k], "')"),
           " is not a directory; mount it, or pass --spread with where it is now");
    const std::string markerPath = (fs::path(dir) / SpreadMarker::kFileName).string();
    struct stat st {};
    if (::stat(markerPath.c_str(), &st) != 0)
      fail(ErrorKind::Missing, markerPath, ": not found; ", dir, " is not spread root ", k, " of ", dst);
    const SpreadMarker have = SpreadMarker::parse(readInputFile(markerPath, kMarkerInput), markerPath);
    const SpreadMarker want = SpreadMarker::forRoot(m, static_cast<int>(k));
    if (have != want)
      fail(ErrorKind::Mismatch, markerPath, ": this directory is root ", have.root, " of ", have.roots,
           " of a container with config sha256 ", have.configSha256.substr(0, 12), "… (bits ", have.settings.bits,
           "), not root ", want.root, " of ", want.roots, " of ", dst, " (", want.configSha256.substr(0, 12),
           "…, bits ", want.settings.bits, "): wrong or swapped --spread directory");
    dirs.push_back(dir);
  }
  return dirs;
}

std::vector<ShardRoot> shardRoots(const std::string& dst, const ExpertManifest& m,
                                  const std::vector<std::string>& overrides) {
  std::vector<ShardRoot> roots{{dst, "."}};
  if (!m.spread()) {
    if (!overrides.empty()) fail(ErrorKind::Usage, "--spread: ", dst, " is not spread over several directories");
    return roots;
  }
  const std::vector<std::string> dirs = resolveSpreadRoots(dst, m, overrides);
  for (size_t k = 1; k < dirs.size(); ++k) roots.push_back({dirs[k], m.roots[k]});
  return roots;
}

std::string shardPath(const std::vector<ShardRoot>& roots, const ManifestShard& s) {
  return (fs::path(roots[static_cast<size_t>(s.root)].dir) / s.file).string();
}

}  // namespace k3
