// The root's list of files open for writing (open_files_xattr.h), which
// `peregrine sync` reads to fsync each of them.
#include <linux/limits.h>

#include <charconv>
#include <cstring>
#include <set>
#include <vector>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

// A page's worth of typical paths (tens of bytes each; up to about 4000
// short ones fit).
constexpr size_t kPathsPerWalk = 1024;

}  // namespace

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
  const std::vector<uint64_t> listed = fs.write_open_files.list(after);
  // Paths are found a batch at a time (each batch reads its files' hinted
  // directories, and walks every directory only for stale hints, under the
  // namespace lock, shared), and the page ends the work once full.
  std::string page;
  for (size_t next = 0; next < listed.size();) {
    std::set<meta::Ino> batch;
    while (next < listed.size() && batch.size() < kPathsPerWalk) {
      const uint64_t ino = listed[next++];
      meta::InodeAttr a;
      if (caller_uid == 0 || (fs.meta.getattr(ino, &a) == 0 && a.uid == caller_uid)) batch.insert(ino);
    }
    for (const auto& [ino, path] : fs.meta.paths_of(batch)) {
      // A path open(2) cannot take is sent empty: the command says which
      // inode it could not reach rather than miss it without a word.
      std::string record = std::to_string(ino) + '\t' + (path.size() < PATH_MAX ? path : std::string()) + '\0';
      if (page.size() + record.size() > kOpenFilesPageBytes) return page;
      page += record;
    }
  }
  return page;
}

}  // namespace peregrine::fs
