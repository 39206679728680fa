#include "peregrine/volume/mkfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "member_identity.h"
#include "member_refusal.h"
#include "member_zero.h"
#include "peregrine/backend/member_file.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/round.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/size_text.h"
#include "signature_probe.h"

namespace peregrine {
namespace {

Status check_options(const MkfsOptions& o) {
  if (o.members.empty()) return Status::error(EINVAL, "no members given");
  if (o.members.size() > kMaxMembers)
    return Status::error(EINVAL, std::to_string(o.members.size()) + " members given; a volume holds at most " +
                                     std::to_string(kMaxMembers));
  uint32_t u = o.stripe_unit;
  if (u < kMinStripeUnit || u > kMaxStripeUnit || (u & (u - 1)) != 0)
    return Status::error(EINVAL, "stripe unit " + format_size(u) + " is not a power of two between 4 KiB and 1 MiB");
  if (o.label.size() > kMaxLabelBytes)
    return Status::error(EINVAL, "label is " + std::to_string(o.label.size()) + " bytes; at most " +
                                     std::to_string(kMaxLabelBytes) + " allowed");
  if (o.label.find('\0') != std::string::npos) return Status::error(EINVAL, "label contains a NUL byte");
  if (o.meta_size && *o.meta_size > (uint64_t{1} << 62))
    return Status::error(EINVAL, "metadata size " + format_size(*o.meta_size) + " is too large");
  if (o.meta_size && *o.meta_size < kMinMetaSize)
    return Status::error(
        EINVAL, "metadata size " + format_size(*o.meta_size) + " is below the minimum of " + format_size(kMinMetaSize));
  if (int(o.meta_size.has_value()) + int(o.inodes.has_value()) + int(o.bytes_per_inode.has_value()) > 1)
    return Status::error(EINVAL, "give at most one of --meta-size, --inodes and --bytes-per-inode");
  if (o.bytes_per_inode && *o.bytes_per_inode < kMinBytesPerInode)
    return Status::error(EINVAL, "bytes per inode " + std::to_string(*o.bytes_per_inode) + " is below the minimum of " +
                                     std::to_string(kMinBytesPerInode));
  if (o.inodes && (*o.inodes == 0 || *o.inodes > (uint64_t{1} << 40)))
    return Status::error(EINVAL, "inode count " + std::to_string(*o.inodes) + " is out of range (1 to 2^40)");
  return Status::ok();
}

// Everything mkfs learns about one member before it writes anything.
struct Candidate {
  MemberIdentity id;
  std::optional<MemberFile> file;  // open and locked, when the path exists
  uint64_t final_size = 0;         // after --size is applied
};

// Refuses a member that holds anything worth keeping, unless forced.
Status check_contents(const Candidate& c, bool force) {
  auto sbs = read_member_superblocks(*c.file);
  if (!sbs) return sbs.status();
  if (force) return Status::ok();
  if (sbs->any_magic()) {
    const auto& copy = sbs->primary.superblock ? sbs->primary : sbs->backup;
    if (copy.superblock) {
      const Superblock& sb = *copy.superblock;
      return refuse_member(c.id.path, "already member " + std::to_string(sb.member_index) + " of " +
                                          std::to_string(sb.member_count()) + " of peregrine volume " +
                                          sb.volume_uuid.to_string() + " (use --force to overwrite)");
    }
    return refuse_member(c.id.path, "holds a damaged peregrine superblock (use --force to overwrite)");
  }
  auto found = probe_foreign_signature(c.id.path);
  if (!found) return found.status();
  if (*found) return refuse_member(c.id.path, "holds " + **found + " (use --force to overwrite)");
  return Status::ok();
}

Status open_and_lock(Candidate& c) {
  auto f = open_member_locked(c.id.path, MemberFile::Mode::read_write);
  if (!f) return f.status();
  if (f->info().logical_block_size > kBlockSize)
    return refuse_member(c.id.path, "logical block size " + std::to_string(f->info().logical_block_size) +
                                        " is larger than the volume block size " + std::to_string(kBlockSize));
  c.file = std::move(*f);
  return Status::ok();
}

// Phase 2 must not fail half-way over a member that cannot be created, after
// growing the ones before it: check the directory now.
Status check_creatable(const MemberIdentity& id) {
  std::filesystem::path dir = std::filesystem::path(id.absolute).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return refuse_member(id.path, "cannot be created: " + dir.string() + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    return refuse_member(id.path, "cannot be created in " + dir.string() + ": " + std::strerror(errno));
  return Status::ok();
}

// Creates or grows a regular-file member to `size` (never shrinks it).
Status grow_file(const std::string& path, uint64_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return refuse_member(path, std::string("cannot create: ") + std::strerror(errno));
  struct stat st {};
  int rc = ::fstat(fd, &st);
  if (rc == 0 && static_cast<uint64_t>(st.st_size) < size) rc = ::ftruncate(fd, static_cast<off_t>(size));
  int e = errno;
  ::close(fd);
  if (rc != 0) return refuse_member(path, "cannot set size to " + format_size(size) + ": " + std::strerror(e));
  return Status::ok();
}

Status sync_all(const std::vector<Candidate>& cs) {
  for (const Candidate& c : cs)
    if (int rc = c.file->sync(); rc < 0)
      return Status::error(-rc, "member " + c.id.path + ": cannot sync: " + std::strerror(-rc));
  return Status::ok();
}

// make_volume()'s phases, in order. Only the last two write.

// Phase 1: every member looked at (and locked if it exists): nothing is
// written.
Expected<std::vector<Candidate>> examine_members(const MkfsOptions& o) {
  auto ids = identify_members(o.members, o.size.has_value());
  if (!ids) return ids.status();
  std::vector<Candidate> cs;
  cs.reserve(ids->size());
  for (MemberIdentity& id : *ids) {
    Candidate c;
    c.id = std::move(id);
    if (o.size && c.id.is_block_device)
      return refuse_member(c.id.path, "--size applies to regular files, not block devices");
    if (c.id.exists) {
      if (Status s = open_and_lock(c); !s) return s;
      if (Status s = check_contents(c, o.force); !s) return s;
      c.final_size = c.file->info().size_bytes;
    }
    if (!c.id.exists)
      if (Status s = check_creatable(c.id); !s) return s;
    if (o.size) c.final_size = std::max(c.final_size, *o.size);
    cs.push_back(std::move(c));
  }
  return cs;
}

// The superblock the members will share (each copy then names its own
// index and UUID): the data and metadata areas sized from the smallest
// member and the options, which must leave the data area at least as large
// as the metadata area.
Expected<Superblock> plan_superblock(const MkfsOptions& o, const std::vector<Candidate>& cs) {
  const uint32_t n = static_cast<uint32_t>(cs.size());
  const uint64_t unit = o.stripe_unit;
  const uint64_t row = unit * n;
  const Candidate& smallest =
      *std::min_element(cs.begin(), cs.end(), [](auto& a, auto& b) { return a.final_size < b.final_size; });
  uint64_t member_data =
      smallest.final_size > kDefaultDataStart ? round_down(smallest.final_size - kDefaultDataStart, unit) : 0;
  uint64_t files = 0;
  if (o.inodes) {
    files = *o.inodes;
  } else if (!o.meta_size) {
    files = member_data * n / o.bytes_per_inode.value_or(kDefaultBytesPerInode);
  }
  uint64_t meta = o.meta_size ? round_up(*o.meta_size, row) : meta_size_for_files(files, row);
  if (member_data == 0 || meta > member_data * n / 2) {
    uint64_t need = kDefaultDataStart + round_up((2 * meta + n - 1) / n, unit);
    std::string hint;
    if (member_data > 0 && (o.inodes || o.bytes_per_inode))
      hint =
          " (" + std::to_string(files) + " files need a " + format_size(meta) + " metadata area: ask for fewer files)";
    return refuse_member(smallest.id.path, "too small (" + format_size(smallest.final_size) + "); " +
                                               std::to_string(n) + " member(s) with a " + format_size(meta) +
                                               " metadata area need at least " + format_size(need) + " each" + hint);
  }

  Superblock sb;
  auto vol = Uuid::random();
  if (!vol) return vol.status();
  sb.volume_uuid = *vol;
  for (uint32_t i = 0; i < n; ++i) {
    auto m = Uuid::random();
    if (!m) return m.status();
    sb.member_uuids.push_back(*m);
  }
  sb.stripe_unit = o.stripe_unit;
  sb.data_start = kDefaultDataStart;
  sb.member_data_size = member_data;
  sb.meta_offset = 0;
  sb.meta_size = meta;
  sb.creation_time = static_cast<uint64_t>(std::time(nullptr));
  sb.label = o.label;
  sb.member_uuid = sb.member_uuids[0];
  if (Status s = validate_superblock(sb); !s) return Status::error(EINVAL, "internal: " + s.message());
  return sb;
}

// Phase 2: every member passed; files created or grown, the new ones
// opened and locked.
Status prepare_members(const MkfsOptions& o, std::vector<Candidate>& cs) {
  for (Candidate& c : cs) {
    if (o.size)
      if (Status s = grow_file(c.id.path, *o.size); !s) return s;
    // A member that existed keeps its descriptor and lock; growing it
    // through another descriptor is visible to ours.
    if (!c.file)
      if (Status s = open_and_lock(c); !s) return s;
  }
  return Status::ok();
}

// Phase 3: the header region, the metadata area's share of each member
// (meta_offset is 0 and meta_size a whole number of stripe rows, so that
// share is one contiguous range after data_start) and the tail wiped; then
// the primary superblocks, then the backups, each step synced before the
// next.
Status write_members(const std::vector<Candidate>& cs, const Superblock& sb) {
  const uint32_t n = static_cast<uint32_t>(cs.size());
  AlignedBuffer zeros(kZeroChunkBytes);
  const uint64_t meta_per_member = sb.meta_size / n;
  // The journal's share of each member: whole stripe rows, as the
  // metadata area's volume offsets 0.. map onto the members.
  const uint64_t row = uint64_t{sb.stripe_unit} * n;
  const uint64_t journal_per_member = (journal_capacity(sb.meta_size) + row - 1) / row * sb.stripe_unit;
  for (const Candidate& c : cs) {
    const MemberFile& m = *c.file;
    uint64_t size = round_down(c.final_size, kBlockSize);
    const uint64_t meta_end = sb.data_start + meta_per_member;
    // In a file member on a disk the journal is written out, not left a
    // hole: a commit's flush then flushes bytes only. A write into a hole
    // makes the host filesystem allocate, and every journal flush would
    // commit the host's own journal too (a tenth of a SQLite commit's time
    // on ext4). The ring is written all over in use anyway. tmpfs has no
    // journal to commit, and its holes hold no RAM: those stay holes.
    const bool write_journal = !c.id.is_block_device && !m.info().memory_backed;
    const uint64_t journal_end = write_journal ? std::min(sb.data_start + journal_per_member, meta_end) : sb.data_start;
    if (Status s = zero_member_range(m, 0, sb.data_start, zeros); !s) return s;
    if (Status s = write_member_zeros(m, sb.data_start, journal_end, zeros); !s) return s;
    if (Status s = zero_member_range(m, journal_end, meta_end, zeros); !s) return s;
    uint64_t tail = std::max(sb.data_start + meta_per_member, size > kTailWipe ? size - kTailWipe : 0);
    if (Status s = zero_member_range(m, tail, size, zeros); !s) return s;
  }
  if (Status s = sync_all(cs); !s) return s;
  for (uint64_t offset : {kPrimarySuperblockOffset, kBackupSuperblockOffset}) {
    for (uint32_t i = 0; i < n; ++i) {
      Superblock own = sb;
      own.member_index = i;
      own.member_uuid = sb.member_uuids[i];
      if (Status s = write_superblock_copy(*cs[i].file, own, offset); !s) return s;
    }
    if (Status s = sync_all(cs); !s) return s;
  }
  return Status::ok();
}

}  // namespace

uint64_t journal_capacity(uint64_t meta_size) {
  constexpr uint64_t kMiB = 1 << 20;
  return round_down(std::clamp<uint64_t>(meta_size / 4, kMiB, 256 * kMiB), kBlockSize);
}

uint64_t checkpoint_capacity(uint64_t meta_size) {
  const uint64_t journal = journal_capacity(meta_size);
  if (meta_size < journal + 2 * 2 * kBlockSize) return 0;
  return round_down((meta_size - journal) / 2, kBlockSize) - kBlockSize;  // a slot less its header block
}

uint64_t meta_size_for_files(uint64_t files, uint64_t row) {
  const uint64_t body = files * kMetaBytesPerFile;
  // Journal = a quarter of the area (up to 256 MiB), slots = the rest
  // halved: the area is 8/3 of a slot, or two slots plus 256 MiB.
  constexpr uint64_t kMaxJournal = 256ull << 20;
  const uint64_t slot = body + kBlockSize;
  uint64_t size = slot / 3 * 8;
  if (size / 4 > kMaxJournal) size = 2 * slot + kMaxJournal;
  size = round_up(std::max(kMinMetaSize, size), row);
  while (checkpoint_capacity(size) < body && size < (uint64_t{1} << 62)) {
    const uint64_t missing = body - checkpoint_capacity(size);
    size = round_up(size + 2 * missing, row);
  }
  return size;
}

Expected<MkfsResult> make_volume(const MkfsOptions& o) {
  if (Status s = check_options(o); !s) return s;
  auto cs = examine_members(o);
  if (!cs) return cs.status();
  auto sb = plan_superblock(o, *cs);
  if (!sb) return sb.status();
  if (Status s = prepare_members(o, *cs); !s) return s;
  if (Status s = write_members(*cs, *sb); !s) return s;

  MkfsResult result;
  result.superblock = *sb;
  result.files_planned = checkpoint_capacity(sb->meta_size) / kMetaBytesPerFile;
  for (const Candidate& c : *cs) result.members.push_back(c.id.path);
  return result;
}

}  // namespace peregrine
