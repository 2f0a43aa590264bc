// The bounded FIFO in front of the generation slots: handlers push, the
// engine's worker pops. A full queue refuses at once (the caller answers 429)
// instead of letting clients pile up behind a CPU-bound model.
// Thread-safety: thread-safe (one mutex): handler threads push while the worker
// pops.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

namespace k3::serve {

template <typename T>
class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity) : capacity_(capacity) {}

  // False when `capacity` items already wait (or the queue is closed).
  bool tryPush(std::shared_ptr<T> item) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (closed_ || items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
    }
    cv_.notify_one();
    return true;
  }

  // Blocks for the oldest item; null once closed.
  std::shared_ptr<T> pop() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return nullptr;
    auto item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // The oldest item without waiting; null when none waits.
  std::shared_ptr<T> tryPop() {
    std::lock_guard<std::mutex> lock(m_);
    if (items_.empty()) return nullptr;
    auto item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Wakes the consumer; items still waiting are handed back for the caller to fail.
  std::deque<std::shared_ptr<T>> close() {
    std::deque<std::shared_ptr<T>> left;
    {
      std::lock_guard<std::mutex> lock(m_);
      closed_ = true;
      left.swap(items_);
    }
    cv_.notify_all();
    return left;
  }

  size_t depth() const {
    std::lock_guard<std::mutex> lock(m_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<T>> items_;
  bool closed_ = false;
};

}  // namespace k3::serve
