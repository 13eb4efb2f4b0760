// A named pool of slots with a fixed depth: at most `depth` holders at once, the rest wait in
// Acquire. Scarce resources (LLM concurrency per provider) are such pools. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

namespace kforge {

class ConcurrencyPool {
 public:
  // A depth below 1 is taken as 1.
  ConcurrencyPool(std::string name, int depth);
  ConcurrencyPool(const ConcurrencyPool&) = delete;
  ConcurrencyPool& operator=(const ConcurrencyPool&) = delete;

  // Blocks until a slot is free and takes it.
  void Acquire();
  // Gives back a slot taken by Acquire.
  void Release();

  const std::string& name() const { return name_; }
  int depth() const { return depth_; }
  int in_use() const;

  // Holds a slot for its lifetime.
  class Slot {
   public:
    explicit Slot(ConcurrencyPool& pool) : pool_(pool) { pool_.Acquire(); }
    ~Slot() { pool_.Release(); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    ConcurrencyPool& pool_;
  };

 private:
  const std::string name_;
  const int depth_;
  mutable std::mutex mutex_;
  std::condition_variable slot_freed_;
  int in_use_ = 0;  // guarded by mutex_
};

}  // namespace kforge
