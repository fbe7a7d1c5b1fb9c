// ccf — concurrent cuckoo filters.
// detail/runtime_model.hpp: the virtual interface behind ccf::runtime_filter, and its two
// implementations: over a typed static filter, and over a growing filter (both with
// std::string_view keys).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ccf/detail/batch_ops.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "ccf/hash.hpp"

namespace ccf::detail {

/// What ccf::runtime_filter asks of a filter over std::string_view keys.
class runtime_model {
 public:
  virtual ~runtime_model() = default;
  virtual std::uint64_t hash_of(std::string_view key) const noexcept = 0;
  virtual bool insert_hash(std::uint64_t h) = 0;
  virtual bool contains_hash(std::uint64_t h) const = 0;
  virtual bool erase_hash(std::uint64_t h) = 0;
  virtual std::size_t count_hash(std::uint64_t h) const = 0;
  virtual std::size_t insert_many_hashes(std::span<const std::uint64_t> hashes) = 0;
  virtual std::size_t contains_many_hashes(std::span<const std::uint64_t> hashes,
                                           std::span<bool> found) const = 0;
  virtual std::size_t apply_many_hashes(std::span<const operation<std::uint64_t>> ops,
                                        std::span<bool> results) = 0;
  virtual bulk_result bulk_insert(std::span<const std::string_view> keys, unsigned threads,
                                  bool skip_present) = 0;
  virtual bulk_result bulk_insert_hashes(std::span<const std::uint64_t> hashes, unsigned threads,
                                         bool skip_present) = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual std::size_t capacity() const noexcept = 0;
  virtual std::size_t num_buckets() const noexcept = 0;
  virtual std::size_t size_in_bytes() const noexcept = 0;
  virtual std::size_t memory_in_bytes() const { return size_in_bytes(); }
  virtual std::size_t chunks() const noexcept = 0;
  virtual std::size_t max_kicks() const noexcept = 0;
  virtual std::size_t relocations() const noexcept = 0;
  virtual std::uint64_t seed() const noexcept = 0;
  virtual void clear() = 0;
  virtual void save(std::ostream& out) const = 0;
  virtual std::vector<std::byte> to_bytes() const = 0;
  virtual std::uint64_t read_bytes(std::uint64_t offset, std::uint64_t len,
                                   std::vector<std::byte>& out) const = 0;
  /// A model that holds this one's filter, moved out of it: this one keeps the moved-from filter,
  /// an empty one (what a moved-from runtime filter holds).
  virtual std::unique_ptr<runtime_model> take() = 0;
  // Growing filters only.
  virtual bool growing() const noexcept { return false; }
  virtual unsigned doublings() const noexcept { return 0; }
  virtual double fpr_bound() const { return 0.0; }
};

/// runtime_model over a filter object: every operation forwarded to it.
template <class Filter>
class forwarding_model : public runtime_model {
 public:
  template <class... Args>
  explicit forwarding_model(Args&&... args) : f_(std::forward<Args>(args)...) {}

  std::uint64_t hash_of(std::string_view key) const noexcept override { return f_.hash_of(key); }
  bool insert_hash(std::uint64_t h) override { return f_.insert_hash(h); }
  bool contains_hash(std::uint64_t h) const override { return f_.contains_hash(h); }
  bool erase_hash(std::uint64_t h) override { return f_.erase_hash(h); }
  std::size_t count_hash(std::uint64_t h) const override { return f_.count_hash(h); }
  std::size_t insert_many_hashes(std::span<const std::uint64_t> hashes) override {
    return f_.insert_many_hashes(hashes);
  }
  std::size_t contains_many_hashes(std::span<const std::uint64_t> hashes,
                                   std::span<bool> found) const override {
    return f_.contains_many_hashes(hashes, found);
  }
  std::size_t apply_many_hashes(std::span<const operation<std::uint64_t>> ops,
                                std::span<bool> results) override {
    return f_.apply_many_hashes(ops, results);
  }
  bulk_result bulk_insert(std::span<const std::string_view> keys, unsigned threads,
                          bool skip_present) override {
    return f_.bulk_insert(keys, threads, skip_present);
  }
  bulk_result bulk_insert_hashes(std::span<const std::uint64_t> hashes, unsigned threads,
                                 bool skip_present) override {
    return f_.bulk_insert_hashes(hashes, threads, skip_present);
  }
  std::size_t size() const noexcept override { return f_.size(); }
  std::size_t capacity() const noexcept override { return f_.capacity(); }
  std::size_t num_buckets() const noexcept override { return f_.num_buckets(); }
  std::size_t size_in_bytes() const noexcept override { return f_.size_in_bytes(); }
  std::size_t memory_in_bytes() const override { return f_.memory_in_bytes(); }
  std::size_t chunks() const noexcept override { return f_.chunks(); }
  std::uint64_t seed() const noexcept override { return f_.seed(); }
  void clear() override { f_.clear(); }
  void save(std::ostream& out) const override { f_.save(out); }
  std::vector<std::byte> to_bytes() const override { return f_.to_bytes(); }
  std::uint64_t read_bytes(std::uint64_t offset, std::uint64_t len,
                           std::vector<std::byte>& out) const override {
    return f_.read_bytes(offset, len, out);
  }

 protected:
  Filter f_;
};

/// The runtime filter's view of a typed (static) filter.
template <class Filter>
class runtime_model_of final : public forwarding_model<Filter> {
 public:
  using forwarding_model<Filter>::forwarding_model;
  std::unique_ptr<runtime_model> take() override {
    return std::make_unique<runtime_model_of>(std::move(this->f_));
  }
  std::size_t max_kicks() const noexcept override { return this->f_.max_kicks(); }
  std::size_t relocations() const noexcept override { return this->f_.relocations(); }
};

/// The runtime filter's view of a growing filter over std::string_view keys.
template <bool Concurrent, class Allocator>
class growing_runtime_model final
    : public forwarding_model<basic_growing_filter<std::string_view, ccf::hash<std::string_view>,
                                                   Concurrent, Allocator>> {
 public:
  using growing_runtime_model::forwarding_model::forwarding_model;
  std::unique_ptr<runtime_model> take() override {
    return std::make_unique<growing_runtime_model>(std::move(this->f_));
  }
  std::size_t max_kicks() const noexcept override { return growing_max_kicks; }
  std::size_t relocations() const noexcept override { return 0; }
  bool growing() const noexcept override { return true; }
  unsigned doublings() const noexcept override { return this->f_.doublings(); }
  double fpr_bound() const override { return this->f_.fpr_bound(); }
};

}  // namespace ccf::detail
