#include "k3/format/durable_file.h"

#include "k3/io/output_file.h"

namespace k3 {

void writeFileAtomic(const std::string& path, std::string_view bytes, std::span<const FileId> inputs) {
  AtomicOutput out(path, inputs);
  out.write(bytes);
  out.commit();
}

}  // namespace k3
