#include "harness/host_blocks.hpp"

#include <algorithm>
#include <utility>

#include <unistd.h>

#include <cuda_runtime_api.h>

namespace cudalab::harness {

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

HostBlock::HostBlock(HostBlock&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

HostBlock& HostBlock::operator=(HostBlock&& other) noexcept {
  if (this != &other) {
    release();
    cache_ = std::exchange(other.cache_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

HostBlock::~HostBlock() { release(); }

void HostBlock::release() noexcept {
  if (data_ != nullptr && cache_ != nullptr) cache_->give_back(data_, capacity_, pinned_);
  data_ = nullptr;
  cache_ = nullptr;
}

HostBlockCache::HostBlockCache(std::size_t budget, bool try_pinned) : budget_(budget), try_pinned_(try_pinned) {}

HostBlockCache::~HostBlockCache() {
  for (const Cached& block : cached_) free_block(block);
}

HostBlock HostBlockCache::acquire(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  HostBlock block;
  block.cache_ = this;
  if (bytes >= kSmallest) {
    const std::lock_guard<std::mutex> lock(mutex_);
    // The smallest cached block that holds the request without wasting more than half of itself.
    auto best = cached_.end();
    for (auto it = cached_.begin(); it != cached_.end(); ++it)
      if (it->capacity >= bytes && it->capacity / 2 <= bytes &&
          (best == cached_.end() || it->capacity < best->capacity))
        best = it;
    if (best != cached_.end()) {
      block.data_ = best->data;
      block.capacity_ = best->capacity;
      block.pinned_ = best->pinned;
      cached_bytes_ -= best->capacity;
      cached_.erase(best);
      return block;
    }
    trim_for(bytes);
    if (try_pinned_ && pinned_bytes_ + bytes <= budget_) {
      void* pointer = nullptr;
      if (cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable) == cudaSuccess) {
        block.data_ = static_cast<unsigned char*>(pointer);
        block.capacity_ = bytes;
        block.pinned_ = true;
        pinned_bytes_ += bytes;
        return block;
      }
      (void)cudaGetLastError();  // not page-locked: pageable memory serves
    }
  }
  block.data_ = new unsigned char[bytes];
  block.capacity_ = bytes;
  return block;
}

std::size_t HostBlockCache::cached_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

void HostBlockCache::give_back(unsigned char* data, std::size_t capacity, bool pinned) noexcept {
  if (capacity < kSmallest || capacity > budget_) {
    free_block({data, capacity, pinned});
    return;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  trim_for(capacity);
  cached_.push_back({data, capacity, pinned});
  cached_bytes_ += capacity;
}

void HostBlockCache::free_block(const Cached& block) noexcept {
  if (block.pinned) {
    cudaFreeHost(block.data);
    pinned_bytes_ -= block.capacity;
  } else {
    delete[] block.data;
  }
}

void HostBlockCache::trim_for(std::size_t room) noexcept {
  while (!cached_.empty() && cached_bytes_ + room > budget_) {
    const Cached oldest = cached_.front();
    cached_.erase(cached_.begin());
    cached_bytes_ -= oldest.capacity;
    free_block(oldest);
  }
}

HostBlockCache& HostBlockCache::process() {
  static HostBlockCache* const cache = new HostBlockCache(static_cast<std::size_t>(physical_memory_bytes() / 4), true);
  return *cache;
}

}  // namespace cudalab::harness
