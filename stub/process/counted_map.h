#pragma once
// A std::map whose changes are counted: it is read through const members
// and changed only through edit(), which counts, so a list derived from it
// knows it is stale by comparing one number (PtraceProcess::inserted_int3s:
// rebuilding it from thousands of int3s at every checkpoint took 4% of the
// tracer's time). Code that changes the map without edit() does not compile.
#include <cstddef>
#include <cstdint>
#include <map>

namespace stub::process {

template <class Key, class Value>
class CountedMap {
 public:
  using Map = std::map<Key, Value>;
  using const_iterator = typename Map::const_iterator;

  const Map& get() const { return map_; }
  Map& edit() {
    ++changes_;
    return map_;
  }
  uint64_t changes() const { return changes_; }

  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  const_iterator find(const Key& key) const { return map_.find(key); }
  const_iterator lower_bound(const Key& key) const { return map_.lower_bound(key); }
  const Value& at(const Key& key) const { return map_.at(key); }
  std::size_t count(const Key& key) const { return map_.count(key); }
  bool empty() const { return map_.empty(); }
  std::size_t size() const { return map_.size(); }

 private:
  Map map_;
  uint64_t changes_ = 0;
};

}  // namespace stub::process
