#include "llm/concurrency_pool.h"

#include <algorithm>

namespace kforge {

ConcurrencyPool::ConcurrencyPool(std::string name, int depth) : name_(std::move(name)), depth_(std::max(1, depth)) {}

void ConcurrencyPool::Acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  slot_freed_.wait(lock, [this] { return in_use_ < depth_; });
  ++in_use_;
}

void ConcurrencyPool::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_use_;
  }
  slot_freed_.notify_one();
}

int ConcurrencyPool::in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

}  // namespace kforge
