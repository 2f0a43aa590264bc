// The state cache's disk tier: a directory of checkpoint files
// (state_file.h), shared by every server given it — restarts and replicas.
// Files are content-addressed (named by their prefix key), published
// atomically and never modified, so readers need no lock: a name that is
// listed is a complete file or one that fails its checks (and is ignored,
// with one log line). Writes happen on a background thread so a checkpoint
// never delays a reply; after each write the directory is held to its byte
// budget by removing the least recently used files (a read refreshes a
// file's time).
// Thread-safety: publish() and the lookups may be called from one thread
// (the engine's) while the writer thread runs; the writer only adds and
// removes whole files.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>

#include "k3/serve/state_file.h"

namespace k3::serve {

struct StateDirectoryStats {
  uint64_t written = 0, writeSkipped = 0, loaded = 0, refused = 0, removed = 0;
};

class StateDirectory {
 public:
  using Log = std::function<void(const std::string&)>;
  // Creates `dir` if missing; throws k3::Error(Usage) naming it when it is
  // not a writable directory. pendingBudget: bytes of checkpoints that may
  // wait for the writer (beyond it a checkpoint is not written).
  StateDirectory(std::string dir, uint64_t diskBudget, uint64_t pendingBudget, Sha256Digest container,
                 StateShape shape, Log log);
  ~StateDirectory();  // writes what is queued, then stops
  // What the constructor checks first (creates `dir` if missing, else
  // throws Usage naming it): for k3-run to refuse a bad --state-cache-dir in
  // milliseconds, before it maps and loads the model.
  static void checkUsable(const std::string& dir);
  StateDirectory(const StateDirectory&) = delete;
  StateDirectory& operator=(const StateDirectory&) = delete;

  // The keys (file stems) of the files published now.
  std::unordered_set<std::string> listKeys() const;
  // The checkpoint keyed `key`, or null (missing, or refused: logged once).
  std::shared_ptr<model::StateSnapshot> load(const StateKey& key);
  // Queues `s` for writing unless its file exists (then its time is refreshed).
  void publish(std::shared_ptr<const model::StateSnapshot> s);
  // Blocks until the queue is written (tests, shutdown).
  void drain();
  StateDirectoryStats stats() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string pathOf(const std::string& stem) const { return dir_ + "/" + stem + kStateFileSuffix; }
  void writer();
  void enforceBudget();

  std::string dir_;
  uint64_t diskBudget_, pendingBudget_;
  Sha256Digest container_;
  StateShape shape_;
  Log log_;
  std::set<std::string> refused_;  // "stem size mtime" already logged (bounded)

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const model::StateSnapshot>> queue_;
  uint64_t pendingBytes_ = 0;
  bool busy_ = false, stop_ = false;
  StateDirectoryStats stats_;
  std::thread thread_;
};

}  // namespace k3::serve
