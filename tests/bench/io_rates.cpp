// k3_io_rates: the baselines scripts/bench_repack and scripts/bench_verify
// set the tools against (issue 22), measured in the same run as the tools:
//
//   k3_io_rates read FILE... [--block B] [--depth D]
//       O_DIRECT reads of the files, front to back, B bytes per request, D
//       requests in flight (D threads taking the next block in turn).
//   k3_io_rates write DIR --bytes N [--block B] [--depth D]
//       O_DIRECT writes of N bytes into a fresh file in DIR (space reserved
//       first, as SafetensorsWriter does), D in flight, timed until
//       fdatasync returns; the file is removed afterwards.
//   k3_io_rates sha [--bytes N] [--threads T]
//       SHA-256 over an in-memory buffer of N bytes per thread: SHA-NI one
//       stream, SHA-NI two interleaved streams over the same bytes (what
//       both tools do for shard + expert digests), OpenSSL; on 1 thread
//       and on T threads (default: all cores).
//
// Each prints one JSON object on stdout. Sizes accept K/M/G suffixes (2^10..).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "k3/io/sha256.h"
#include "k3/io/sha256_ni.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "k3_io_rates: %s\n", what.c_str());
  std::exit(1);
}

uint64_t parseSize(const char* s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) die(std::string("not a size: ") + s);
  uint64_t mul = 1;
  switch (*end) {
    case 'K': mul = uint64_t{1} << 10; break;
    case 'M': mul = uint64_t{1} << 20; break;
    case 'G': mul = uint64_t{1} << 30; break;
    case '\0': break;
    default: die(std::string("not a size: ") + s);
  }
  return v * mul;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) {
    if (::posix_memalign(reinterpret_cast<void**>(&p), size_t{2} << 20, n) != 0) die("out of memory");
    std::memset(p, 0x5a, n);  // touched before timing
  }
  ~AlignedBuffer() { std::free(p); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  uint8_t* p = nullptr;
};

struct Options {
  std::vector<std::string> paths;
  uint64_t block = uint64_t{4} << 20, bytes = 0;
  size_t depth = 1, threads = 0;
};

Options parse(int argc, char** argv, int first) {
  Options o;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--block") o.block = parseSize(value());
    else if (a == "--depth") o.depth = static_cast<size_t>(parseSize(value()));
    else if (a == "--bytes") o.bytes = parseSize(value());
    else if (a == "--threads") o.threads = static_cast<size_t>(parseSize(value()));
    else if (a.rfind("--", 0) == 0) die("unknown option " + a);
    else o.paths.push_back(a);
  }
  if (o.block == 0 || o.block % 4096 != 0) die("--block must be a positive multiple of 4096");
  if (o.depth == 0) die("--depth must be at least 1");
  return o;
}

// One file's requests, taken in turn by the depth threads.
struct ReadFile {
  int fd = -1;
  uint64_t size = 0;
};

int readRates(const Options& o) {
  if (o.paths.empty()) die("read: no files");
  std::vector<ReadFile> files;
  uint64_t total = 0;
  for (const std::string& p : o.paths) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) die(p + ": " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) != 0) die(p + ": " + std::strerror(errno));
    files.push_back({fd, static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  // Requests are numbered over the concatenated files; each thread takes the
  // next number, so D requests are in flight across file boundaries.
  std::vector<uint64_t> firstBlock;
  uint64_t blocks = 0;
  for (const ReadFile& f : files) {
    firstBlock.push_back(blocks);
    blocks += (f.size + o.block - 1) / o.block;
  }
  std::atomic<uint64_t> next{0}, got{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (size_t t = 0; t < o.depth; ++t)
    ts.emplace_back([&] {
      AlignedBuffer buf(o.block);
      size_t fi = 0;
      for (uint64_t b; (b = next.fetch_add(1)) < blocks;) {
        while (fi + 1 < files.size() && firstBlock[fi + 1] <= b) ++fi;
        const uint64_t off = (b - firstBlock[fi]) * o.block;
        const ssize_t n = ::pread(files[fi].fd, buf.p, o.block, static_cast<off_t>(off));
        if (n < 0) die(std::string("read: ") + std::strerror(errno));
        got += static_cast<uint64_t>(n);
      }
    });
  for (auto& t : ts) t.join();
  const double s = seconds(t0, Clock::now());
  for (const ReadFile& f : files) ::close(f.fd);
  if (got != total) die("read: short read");
  std::printf("{\"mode\": \"read\", \"direct\": true, \"block_bytes\": %llu, \"depth\": %zu, \"bytes\": %llu, "
              "\"seconds\": %.4f, \"gb_per_s\": %.4f}\n",
              static_cast<unsigned long long>(o.block), o.depth, static_cast<unsigned long long>(total), s,
              static_cast<double>(total) / 1e9 / s);
  return 0;
}

int writeRates(const Options& o) {
  if (o.paths.size() != 1) die("write: give one directory");
  if (o.bytes == 0) die("write: --bytes is required");
  const uint64_t bytes = (o.bytes + o.block - 1) / o.block * o.block;
  const std::string path = o.paths[0] + "/k3_io_rates.write." + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) die(path + ": " + std::strerror(errno));
  const auto t0 = Clock::now();
  if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0 && rc != EOPNOTSUPP)
    die(path + ": cannot reserve space: " + std::strerror(rc));
  const uint64_t blocks = bytes / o.block;
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> ts;
  for (size_t t = 0; t < o.depth; ++t)
    ts.emplace_back([&] {
      AlignedBuffer buf(o.block);
      for (uint64_t b; (b = next.fetch_add(1)) < blocks;) {
        buf.p[0] = static_cast<uint8_t>(b);  // not all-equal blocks
        if (::pwrite(fd, buf.p, o.block, static_cast<off_t>(b * o.block)) != static_cast<ssize_t>(o.block))
          die(path + ": write failed: " + std::strerror(errno));
      }
    });
  for (auto& t : ts) t.join();
  if (::fdatasync(fd) != 0) die(path + ": fdatasync failed");
  const double s = seconds(t0, Clock::now());
  ::close(fd);
  ::unlink(path.c_str());
  std::printf("{\"mode\": \"write\", \"direct\": true, \"block_bytes\": %llu, \"depth\": %zu, \"bytes\": %llu, "
              "\"seconds\": %.4f, \"gb_per_s\": %.4f}\n",
              static_cast<unsigned long long>(o.block), o.depth, static_cast<unsigned long long>(bytes), s,
              static_cast<double>(bytes) / 1e9 / s);
  return 0;
}

enum class Hash { NiOne, NiPair, OpenSsl };

// GB/s of data bytes over `threads` threads, each hashing its own buffer.
double hashRate(Hash kind, size_t threads, size_t bytes) {
  std::vector<std::unique_ptr<AlignedBuffer>> bufs;
  for (size_t t = 0; t < threads; ++t) bufs.push_back(std::make_unique<AlignedBuffer>(bytes));
  std::atomic<uint64_t> sink{0};
  const size_t step = size_t{4} << 20;  // the tools' read block
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (size_t t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      const uint8_t* p = bufs[t]->p;
      k3::Sha256Digest d{};
      if (kind == Hash::OpenSsl) {
        k3::Sha256 h;
        for (size_t o = 0; o < bytes; o += step) h.update(p + o, std::min(step, bytes - o));
        d = h.finish();
      } else if (kind == Hash::NiOne) {
        k3::Sha256Ni h;
        for (size_t o = 0; o < bytes; o += step) h.update(p + o, std::min(step, bytes - o));
        d = h.finish();
      } else {
        k3::Sha256Ni a, b;
        for (size_t o = 0; o < bytes; o += step) k3::Sha256Ni::updatePair(a, p + o, b, p + o, std::min(step, bytes - o));
        d = a.finish();
        d[0] ^= b.finish()[0];
      }
      sink += d[0];
    });
  for (auto& t : ts) t.join();
  const double s = seconds(t0, Clock::now());
  return static_cast<double>(bytes) * static_cast<double>(threads) / 1e9 / s;
}

int shaRates(const Options& o) {
  const size_t bytes = o.bytes ? static_cast<size_t>(o.bytes) : size_t{512} << 20;
  const size_t all = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const bool ni = k3::sha256NiAvailable();
  std::printf("{\"mode\": \"sha\", \"sha_ni\": %s, \"bytes_per_thread\": %zu, \"threads\": %zu", ni ? "true" : "false",
              bytes, all);
  if (ni) {
    std::printf(", \"ni_one_core_gb_per_s\": %.4f", hashRate(Hash::NiOne, 1, bytes));
    std::printf(", \"ni_all_cores_gb_per_s\": %.4f", hashRate(Hash::NiOne, all, bytes));
    std::printf(", \"ni_pair_one_core_gb_per_s\": %.4f", hashRate(Hash::NiPair, 1, bytes));
    std::printf(", \"ni_pair_all_cores_gb_per_s\": %.4f", hashRate(Hash::NiPair, all, bytes));
  }
  std::printf(", \"openssl_one_core_gb_per_s\": %.4f", hashRate(Hash::OpenSsl, 1, bytes));
  std::printf(", \"openssl_all_cores_gb_per_s\": %.4f}\n", hashRate(Hash::OpenSsl, all, bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: k3_io_rates read FILE... | write DIR --bytes N | sha [--bytes N] [--threads T]");
  const std::string mode = argv[1];
  const Options o = parse(argc, argv, 2);
  if (mode == "read") return readRates(o);
  if (mode == "write") return writeRates(o);
  if (mode == "sha") return shaRates(o);
  die("unknown mode " + mode);
}
