#include "k3/serve/state_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "k3/io/error.h"

namespace k3::serve {

namespace {

bool isStem(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct DirEntry {
  std::string name;
  uint64_t bytes = 0;
  timespec mtime{};
};

std::vector<DirEntry> entries(const std::string& dir) {
  std::vector<DirEntry> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({name, static_cast<uint64_t>(st.st_size), st.st_mtim});
  }
  ::closedir(d);
  return out;
}

// "<stem>.k3state" → stem, else "".
std::string stemOf(const std::string& name) {
  const std::string suffix = kStateFileSuffix;
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  std::string stem = name.substr(0, name.size() - suffix.size());
  return isStem(stem) ? stem : "";
}

}  // namespace

StateDirectory::StateDirectory(std::string dir, uint64_t diskBudget, uint64_t pendingBudget, Sha256Digest container,
                               StateShape shape, Log log)
    : dir_(std::move(dir)), diskBudget_(diskBudget), pendingBudget_(pendingBudget), container_(container),
      shape_(std::move(shape)), log_(std::move(log)) {
  checkUsable(dir_);
  thread_ = std::thread([this] { writer(); });
}

void StateDirectory::checkUsable(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    fail(ErrorKind::Usage, "--state-cache-dir ", dir, ": cannot create: ", std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(ErrorKind::Usage, "--state-cache-dir ", dir, ": not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(ErrorKind::Usage, "--state-cache-dir ", dir, ": not writable: ", std::strerror(errno));
}

StateDirectory::~StateDirectory() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::unordered_set<std::string> StateDirectory::listKeys() const {
  std::unordered_set<std::string> keys;
  for (const DirEntry& e : entries(dir_))
    if (std::string s = stemOf(e.name); !s.empty()) keys.insert(std::move(s));
  return keys;
}

std::shared_ptr<model::StateSnapshot> StateDirectory::load(const StateKey& key) {
  const std::string stem = key.hex(), path = pathOf(stem);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return nullptr;
  StateFileRead r = readStateFile(path, key, shape_, container_);
  std::lock_guard<std::mutex> lock(m_);
  if (!r.snap) {
    stats_.refused += 1;
    const std::string id = stem + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                           std::to_string(st.st_mtim.tv_nsec);
    if (refused_.size() > 4096) refused_.clear();  // bounded; a file refused again is logged again
    if (refused_.insert(id).second) log_("ignoring " + path + ": " + r.problem);
    return nullptr;
  }
  stats_.loaded += 1;
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used: last out under the budget
  return std::move(r.snap);
}

void StateDirectory::publish(std::shared_ptr<const model::StateSnapshot> s) {
  const uint64_t bytes = s->bytes();
  std::lock_guard<std::mutex> lock(m_);
  if (pendingBytes_ + bytes > pendingBudget_ || stateFileBytes(*s) > diskBudget_) {
    stats_.writeSkipped += 1;
    return;
  }
  pendingBytes_ += bytes;
  queue_.push_back(std::move(s));
  cv_.notify_all();
}

void StateDirectory::drain() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

StateDirectoryStats StateDirectory::stats() const {
  std::lock_guard<std::mutex> lock(m_);
  return stats_;
}

void StateDirectory::writer() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and everything written
    auto s = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const std::string path = pathOf(stateKey(container_, s->tokens).hex());
    bool wrote = false;
    if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0) {  // absent: write it (present: a replica did)
      try {
        writeStateFile(path, *s, container_);
        wrote = true;
      } catch (const std::exception& e) {
        log_(std::string("not written: ") + e.what());
      }
    }
    if (wrote) enforceBudget();
    lock.lock();
    pendingBytes_ -= s->bytes();
    if (wrote) stats_.written += 1;
    busy_ = false;
    cv_.notify_all();
  }
}

void StateDirectory::enforceBudget() {
  std::vector<DirEntry> files;
  uint64_t total = 0;
  const time_t now = ::time(nullptr);
  for (DirEntry& e : entries(dir_)) {
    if (!stemOf(e.name).empty()) {
      total += e.bytes;
      files.push_back(std::move(e));
    } else if (e.name.find(std::string(kStateFileSuffix) + ".tmp-") != std::string::npos && now - e.mtime.tv_sec > 3600) {
      ::unlink((dir_ + "/" + e.name).c_str());  // a writer that died mid-file, an hour ago
    }
  }
  if (total <= diskBudget_) return;
  std::sort(files.begin(), files.end(), [](const DirEntry& a, const DirEntry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  uint64_t removed = 0;
  for (const DirEntry& f : files) {
    if (total <= diskBudget_) break;
    if (::unlink((dir_ + "/" + f.name).c_str()) == 0 || errno == ENOENT) {  // ENOENT: a replica removed it
      total -= f.bytes;
      removed += 1;
    }
  }
  std::lock_guard<std::mutex> lock(m_);
  stats_.removed += removed;
}

}  // namespace k3::serve
