#include "signature_probe.h"

#include <blkid/blkid.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace peregrine {
namespace {

struct ProbeDeleter {
  void operator()(blkid_probe p) const { blkid_free_probe(p); }
};
using Probe = std::unique_ptr<std::remove_pointer_t<blkid_probe>, ProbeDeleter>;

std::optional<std::string> value(blkid_probe p, const char* name) {
  const char* data = nullptr;
  if (blkid_probe_lookup_value(p, name, &data, nullptr) == 0 && data != nullptr) return std::string(data);
  return std::nullopt;
}

// "a dos", "an ext4": the article for a libblkid type name, by its first letter.
std::string with_article(const std::string& name) {
  const bool vowel = !name.empty() && std::strchr("aeiouAEIOU", name[0]) != nullptr;
  return (vowel ? "an " : "a ") + name;
}

}  // namespace

Expected<std::optional<std::string>> probe_foreign_signature(const std::string& path) {
  // libblkid opens the path itself, buffered: our O_DIRECT descriptor would
  // refuse its small unaligned reads. A second, non-exclusive open of a block
  // device we hold O_EXCL is allowed.
  Probe probe(blkid_new_probe_from_filename(path.c_str()));
  if (!probe) {
    int e = errno != 0 ? errno : EIO;
    return Status::error(e, "member " + path + ": cannot probe for existing signatures: " + std::strerror(e));
  }
  blkid_probe p = probe.get();
  blkid_probe_enable_superblocks(p, 1);
  blkid_probe_set_superblocks_flags(p, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
  blkid_probe_enable_partitions(p, 1);
  blkid_probe_set_partitions_flags(p, BLKID_PARTS_MAGIC);
  int rc = blkid_do_safeprobe(p);
  if (rc == 1) return std::optional<std::string>();
  if (rc == -2) return std::optional<std::string>("several conflicting signatures (libblkid: ambiguous)");
  if (rc < 0) return Status::error(EIO, "member " + path + ": libblkid probe failed");
  if (auto type = value(p, "TYPE")) {
    auto usage = value(p, "USAGE").value_or("filesystem");
    if (usage == "filesystem") return std::optional<std::string>(with_article(*type) + " filesystem");
    return std::optional<std::string>(with_article(*type) + " signature (" + usage + ")");
  }
  if (auto pttype = value(p, "PTTYPE")) return std::optional<std::string>(with_article(*pttype) + " partition table");
  return std::optional<std::string>("an unidentified signature");
}

}  // namespace peregrine
