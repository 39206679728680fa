// A directory's entries: name -> (inode, cookie). A hash map gives O(1)
// lookup; an ordered index by cookie gives readdir that resumes from any
// cookie in O(log n), so listing a directory of a million entries in pages
// is linear overall. Cookies are handed out increasing and never reused in
// one directory, so a cookie stays valid across concurrent inserts/removes
// (an entry added during a listing may or may not be seen, as POSIX allows).
//
// Thread rules: none inside; guarded by the Model's owner (Metadata's
// namespace lock).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "peregrine/meta/types.h"

namespace peregrine::meta {

struct DirEntryRef {
  Ino ino = 0;
  uint64_t cookie = 0;
};

class Directory {
 public:
  struct StrHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Names = std::unordered_map<std::string, DirEntryRef, StrHash, std::equal_to<>>;
  // cookie -> entry in `names_` (node-based map: pointers stay valid).
  using Index = std::map<uint64_t, const Names::value_type*>;

  const DirEntryRef* find(std::string_view name) const;
  // Adds a new entry (name must not exist). cookie 0 = assign the next one;
  // a non-zero cookie (from a checkpoint or the journal) is kept as is.
  uint64_t add(std::string_view name, Ino ino, uint64_t cookie = 0);
  // Points an existing entry at another inode, keeping its cookie.
  void retarget(std::string_view name, Ino ino);
  bool remove(std::string_view name);
  void reserve(size_t n) { names_.reserve(n); }

  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  uint64_t next_cookie() const { return next_cookie_; }
  void set_next_cookie(uint64_t c) { next_cookie_ = c; }
  // Entries with cookie > `after`, in cookie order.
  Index::const_iterator after(uint64_t cookie) const { return index_.upper_bound(cookie); }
  Index::const_iterator end() const { return index_.end(); }
  const Names& names() const { return names_; }

 private:
  Names names_;
  Index index_;
  uint64_t next_cookie_ = kFirstDirCookie;
};

}  // namespace peregrine::meta
