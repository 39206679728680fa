#include "peregrine/meta/model_paths.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "peregrine/meta/model.h"

namespace peregrine::meta {
namespace {

// The path of directory `dir`, found by its parents; false when it has no
// name (removed while open) or the chain does not reach the root, which a
// consistent model never shows but a list for a user must not loop on.
bool directory_path(const Model& model, Ino dir, std::string* out) {
  std::vector<std::string_view> names;
  for (Ino at = dir; at != kRootIno;) {
    const Inode* in = model.find(at);
    if (in == nullptr || !in->dir || in->attr.nlink == 0 || names.size() > model.inodes.size()) return false;
    const Inode* parent = model.find(in->parent);
    if (parent == nullptr || !parent->dir) return false;
    const auto& entries = parent->dir->names();
    auto entry = std::find_if(entries.begin(), entries.end(), [at](const auto& e) { return e.second.ino == at; });
    if (entry == entries.end()) return false;
    names.push_back(entry->first);
    at = in->parent;
  }
  out->clear();
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!out->empty()) *out += '/';
    *out += *it;
  }
  return true;
}

}  // namespace

std::map<Ino, std::string> paths_of(const Model& model, const std::set<Ino>& inos) {
  std::map<Ino, std::string> out;
  // Each non-directory asked about: the directory holding one of its names.
  std::map<Ino, std::pair<Ino, std::string_view>> holders;
  // Its hint first (Inode::parent), each hinted directory read once.
  std::map<Ino, std::set<Ino>> by_hint;
  for (Ino ino : inos) {
    const Inode* in = model.find(ino);
    if (in == nullptr || in->attr.nlink == 0) continue;
    if (in->dir) {
      std::string path;
      if (directory_path(model, ino, &path)) out.emplace(ino, std::move(path));
    } else {
      by_hint[in->parent].insert(ino);
    }
  }
  std::set<Ino> unfound;
  for (const auto& [hint, files] : by_hint) {
    const Inode* dir = model.find(hint);
    if (dir != nullptr && dir->dir && dir->attr.nlink != 0) {
      for (const auto& [name, ref] : dir->dir->names()) {
        if (files.count(ref.ino) != 0) holders.try_emplace(ref.ino, hint, name);
      }
    }
    for (Ino ino : files) {
      if (holders.count(ino) == 0) unfound.insert(ino);
    }
  }
  // The rest (stale hints): one walk over every directory for all of them.
  size_t found = 0;
  for (const auto& [dir_ino, dir] : model.inodes) {
    if (found == unfound.size()) break;
    if (!dir->dir || dir->attr.nlink == 0) continue;
    for (const auto& [name, ref] : dir->dir->names()) {
      if (unfound.count(ref.ino) != 0 && holders.try_emplace(ref.ino, dir_ino, name).second) ++found;
    }
  }
  // Files listed together mostly share their directories: each is walked once.
  std::map<Ino, std::optional<std::string>> directories;
  for (const auto& [ino, holder] : holders) {
    auto [dir, fresh] = directories.try_emplace(holder.first);
    if (fresh) {
      std::string path;
      if (directory_path(model, holder.first, &path)) dir->second = std::move(path);
    }
    if (!dir->second) continue;
    std::string path = *dir->second;
    if (!path.empty()) path += '/';
    path += holder.second;
    out.emplace(ino, std::move(path));
  }
  return out;
}

}  // namespace peregrine::meta
