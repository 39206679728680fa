// Directory entries: hash map for lookup, cookie-ordered index for readdir.
#include "peregrine/meta/directory.h"

#include <algorithm>

namespace peregrine::meta {

const DirEntryRef* Directory::find(std::string_view name) const {
  auto it = names_.find(name);
  return it == names_.end() ? nullptr : &it->second;
}

uint64_t Directory::add(std::string_view name, Ino ino, uint64_t cookie) {
  if (cookie == 0) cookie = next_cookie_;
  next_cookie_ = std::max(next_cookie_, cookie + 1);
  auto [it, inserted] = names_.emplace(std::string(name), DirEntryRef{ino, cookie});
  if (!inserted) {  // caller bug or replayed duplicate: keep one entry
    index_.erase(it->second.cookie);
    it->second = DirEntryRef{ino, cookie};
  }
  index_[cookie] = &*it;
  return cookie;
}

void Directory::retarget(std::string_view name, Ino ino) {
  auto it = names_.find(name);
  if (it != names_.end()) it->second.ino = ino;
}

bool Directory::remove(std::string_view name) {
  auto it = names_.find(name);
  if (it == names_.end()) return false;
  index_.erase(it->second.cookie);
  names_.erase(it);
  return true;
}

}  // namespace peregrine::meta
