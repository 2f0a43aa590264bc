#include "k3/serve/container_identity.h"

#include <sys/stat.h>

#include "k3/io/input_file.h"

namespace k3::serve {

Sha256Digest containerIdentity(const std::string& dir, const std::string& numerics) {
  struct stat st {};
  const std::string manifest = dir + "/k3-manifest.json";
  const bool hasManifest = ::stat(manifest.c_str(), &st) == 0;
  const std::string bytes = hasManifest ? readInputFile(manifest, kManifestInput)
                                        : readInputFile(dir + "/config.json", kConfigInput);
  Sha256 sha;
  sha.update(hasManifest ? "manifest\n" : "config\n", hasManifest ? 9 : 7);
  sha.update(bytes.data(), bytes.size());
  sha.update("\n", 1);
  sha.update(numerics.data(), numerics.size());
  return sha.finish();
}

}  // namespace k3::serve
