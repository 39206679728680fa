// fsck: which files lose data when a member ends early (truncated file,
// shrunk or failing device). Striping puts every stripe unit of a file's
// extent on member (stripe mod N), row (stripe div N); a member that ends
// inside row R has lost its units of rows R and up.
#include <deque>

#include "peregrine/meta/fsck.h"

namespace peregrine::meta {

std::vector<std::pair<std::string, uint64_t>> files_with_lost_data(const Model& m, const Geometry& g,
                                                                   const LostMember& lost) {
  const uint64_t unit = g.stripe_unit, n = g.member_count;
  // Paths of every reachable inode (the first name found for a hard link).
  std::unordered_map<Ino, std::string> path;
  path[kRootIno] = "";
  std::deque<Ino> todo{kRootIno};
  while (!todo.empty()) {
    const Inode* dir = m.find(todo.front());
    const std::string base = path[todo.front()];
    todo.pop_front();
    if (dir == nullptr || !dir->dir) continue;
    for (const auto& [name, ref] : dir->dir->names()) {
      if (path.count(ref.ino)) continue;
      path[ref.ino] = base + "/" + name;
      const Inode* child = m.find(ref.ino);
      if (child != nullptr && child->dir) todo.push_back(ref.ino);
    }
  }
  std::vector<std::pair<std::string, uint64_t>> out;
  for (Ino ino : m.sorted_inos()) {
    const Inode* in = m.find(ino);
    uint64_t bytes = 0;
    for (const auto& [off, e] : in->extents.extents()) {
      if (e.len == 0) continue;
      const uint64_t end = e.vol_off + e.len;
      // Rows the extent touches, then this member's unit in each of them.
      for (uint64_t row = std::max(lost.first_lost_row, e.vol_off / unit / n); row <= (end - 1) / unit / n; ++row) {
        const uint64_t ub = (row * n + lost.index) * unit, ue = ub + unit;
        const uint64_t b = std::max(ub, e.vol_off), x = std::min(ue, end);
        if (b < x) bytes += x - b;
      }
    }
    if (bytes == 0) continue;
    auto p = path.find(ino);
    out.emplace_back(p != path.end() ? p->second : "#" + std::to_string(ino) + " (unreachable)", bytes);
  }
  return out;
}

}  // namespace peregrine::meta
