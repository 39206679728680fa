// Paths of inodes by number, for lists a user reads and acts on (the files
// `peregrine sync` must fsync itself). A directory knows its parent; a file
// knows the directory that last gave it a name (Inode::parent, a hint),
// and only where that holds it no more are the directories searched for
// its entries, once for all such inodes.
//
// Thread rules: none inside; the caller holds the Model as its owner
// requires (Metadata's namespace lock, shared at least).
#pragma once
#include <map>
#include <set>
#include <string>

#include "peregrine/meta/types.h"

namespace peregrine::meta {

class Model;

// A path relative to the root ("d/f"; "" for the root itself) for each
// inode of `inos` that has a name: one of them for an inode with several
// (hard links), none for an unlinked inode or an unknown number.
// O(entries of each hinted directory), plus O(entries of every directory)
// when a file's hint is stale (the name it gave was unlinked or renamed
// away while another remained; it stays stale until the file is named
// again or the volume mounted again).
std::map<Ino, std::string> paths_of(const Model& model, const std::set<Ino>& inos);

}  // namespace peregrine::meta
