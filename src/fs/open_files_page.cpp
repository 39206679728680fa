// The root's list of files open for writing (open_files_xattr.h), which
// `peregrine sync` reads to fsync each of them.
#include <linux/limits.h>

#include <charconv>
#include <cstring>
#include <set>

#include "fs_context.h"

namespace peregrine::fs {

bool open_files_page_name(const char* name, uint64_t* after) {
  const size_t base = std::strlen(kOpenFilesXattr);
  if (std::strncmp(name, kOpenFilesXattr, base) != 0) return false;
  const char* rest = name + base;
  *after = 0;
  if (*rest == '\0') return true;
  const size_t sep = std::strlen(kOpenFilesAfter);
  if (std::strncmp(rest, kOpenFilesAfter, sep) != 0) return false;
  const char* digits = rest + sep;
  const char* end = digits + std::strlen(digits);
  auto [stop, ec] = std::from_chars(digits, end, *after);
  return digits != end && ec == std::errc() && stop == end;
}

std::string open_files_page(FsContext& fs, uint32_t caller_uid, uint64_t after) {
  std::set<meta::Ino> inos;
  for (uint64_t ino : fs.write_open_files.list(after)) {
    meta::InodeAttr a;
    if (caller_uid == 0 || (fs.meta.getattr(ino, &a) == 0 && a.uid == caller_uid)) inos.insert(ino);
  }
  // One walk over the directories for every file listed, whatever the page
  // will hold: a page takes hundreds of them.
  const std::map<meta::Ino, std::string> paths = fs.meta.paths_of(inos);
  std::string page;
  for (const auto& [ino, path] : paths) {
    // A path open(2) cannot take is sent empty: the command says which
    // inode it could not reach rather than miss it without a word.
    std::string record = std::to_string(ino) + '\t' + (path.size() < PATH_MAX ? path : std::string()) + '\0';
    if (page.size() + record.size() > kOpenFilesPageBytes) break;
    page += record;
  }
  return page;
}

}  // namespace peregrine::fs
