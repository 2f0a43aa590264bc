// Reuse of model state across requests, for any number of conversations.
// Clients resend the whole conversation each turn and KDA state cannot be
// rewound, so the server keeps complete checkpoints (model::StateSnapshot:
// KDA states, conv windows, MLA rows, tokens, last logits), taken at the end
// of each prompt and of each reply and keyed by their exact token prefix
// (state_key.h). A new prompt resumes from the longest stored prefix, in
// whatever order conversations come back.
//
// Two tiers: RAM (LRU by bytes, --state-cache-gb) and, with a directory,
// disk (state_directory.h: every checkpoint is also published there in the
// background; restarts and replicas sharing the directory find it). The
// sequence's live state counts too: when its tokens are a prefix of the
// prompt nothing needs restoring. A checkpoint restores into any sequence
// (the scheduler's slots): it carries its MLA rows.
// Thread-safety: not thread-safe; the engine's worker thread owns it (its stats
// are copied out under the engine's lock). The directory's writer runs on
// its own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "k3/model/sequence_state.h"
#include "k3/serve/state_directory.h"
#include "k3/serve/state_key.h"

namespace k3::serve {

struct StateCacheOptions {
  uint64_t ramBytes = 1ull << 30;  // 0: no reuse at all, every request starts from token 0
  std::string dir;                 // "": RAM only
  uint64_t diskBytes = 16ull << 30;
  Sha256Digest container{};        // container_identity.h
  std::function<void(const std::string&)> log;  // one line per event; default: stderr
};

struct StateCacheStats {
  size_t entries = 0;
  uint64_t bytes = 0;
  StateDirectoryStats disk;
};

class StateCache {
 public:
  StateCache(const StateCacheOptions& o, const ModelConfig& c);
  // The most RAM its checkpoints take: the RAM tier, and with a directory as
  // much again queued for the writer (k3-run's start memory check).
  static uint64_t residentBound(const StateCacheOptions& o) { return o.ramBytes * (o.dir.empty() ? 1 : 2); }

  // Brings `s` to the longest stored prefix of `prompt` (its live state, a
  // RAM checkpoint, a file, or nothing) and returns its length; the caller
  // feeds the rest. Never returns more than prompt.size(), and returns
  // prompt.size() only with logits to generate from (s.logitsCurrent).
  size_t resume(model::SequenceState& s, std::span<const int32_t> prompt);

  // Checkpoints `s` (after a completed feed: s.logitsCurrent).
  void checkpoint(const model::SequenceState& s);

  // Waits until every checkpoint queued for the directory is written.
  void drain();
  StateCacheStats stats() const;

 private:
  struct Entry {
    StateKey key;
    std::shared_ptr<const model::StateSnapshot> snap;
  };
  void insert(const StateKey& key, std::shared_ptr<const model::StateSnapshot> snap);
  void evictToBudget();

  uint64_t budget_;
  Sha256Digest container_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<StateKey, std::list<Entry>::iterator, StateKeyHash> index_;
  uint64_t bytes_ = 0;
  std::unique_ptr<StateDirectory> dir_;
};

}  // namespace k3::serve
