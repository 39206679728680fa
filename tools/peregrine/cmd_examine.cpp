// `peregrine examine MEMBER...` (as mdadm --examine): what each member's
// own superblock and mount record say — volume, label, this member's place,
// geometry, clean or dirty, the last mount and the last-known path of every
// member. One member is enough; the others need not be present. Never
// writes, takes no lock and opens devices without O_EXCL, so a member in
// use can be examined. Exit codes: 0 every argument is a member, 1 some is
// not (or cannot be read), 2 bad command line.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "member_report.h"
#include "peregrine/volume/member_examination.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

void line(std::string& out, const char* key, const std::string& value) {
  std::string k = key;
  out += "  " + k + std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') + value + "\n";
}

// "not a peregrine member", with what is there instead when known.
std::string non_member_text(const MemberExamination& e) {
  if (e.copies.any_magic())
    return "damaged peregrine member: no superblock copy is valid (primary: " + e.copies.primary.problem +
           "; backup: " + e.copies.backup.problem + "); see 'peregrine fsck'";
  std::string s = "not a peregrine member (no peregrine superblock)";
  if (e.foreign_signature) s += "; libblkid finds " + *e.foreign_signature + " on it";
  return s;
}

std::string superblock_copies_text(const MemberExamination& e) {
  if (e.from_backup) return "primary damaged (" + e.copies.primary.problem + "), using the backup";
  if (!e.copies.backup.superblock) return "primary valid, backup damaged (" + e.copies.backup.problem + ")";
  if (*e.copies.backup.superblock != *e.copies.primary.superblock) return "primary valid, backup differs";
  return "primary and backup valid";
}

std::string text_report(const MemberExamination& e) {
  std::string out = e.path + ":\n";
  if (!e.is_member()) return out + "  " + non_member_text(e) + "\n";
  const Superblock& sb = *e.superblock;
  VolumeGeometry g = sb.geometry();
  const MountRecord* r = e.mount_record ? &*e.mount_record : nullptr;
  line(out, "label:", sb.label.empty() ? "(none)" : sb.label);
  line(out, "volume uuid:", sb.volume_uuid.to_string());
  line(out, "member uuid:", sb.member_uuid.to_string());
  line(out, "member:",
       "index " + std::to_string(sb.member_index) + " of " + std::to_string(g.member_count) + " (0.." +
           std::to_string(g.member_count - 1) + ")");
  line(out, "created:", utc_time(sb.creation_time));
  line(out, "format/layout:", std::to_string(sb.format_version) + "/" + std::to_string(sb.layout_version));
  line(out, "stripe unit:", format_size(g.stripe_unit));
  line(out, "data start:", format_size(g.data_start) + " (member offset)");
  line(out, "member data size:",
       format_size(g.member_data_size) + " (" + std::to_string(g.member_data_size) + " bytes per member)");
  line(out, "volume size:", format_size(g.volume_size()) + " (" + std::to_string(g.volume_size()) + " bytes)");
  line(out, "metadata area:",
       "offset " + std::to_string(sb.meta_offset) + ", " + format_size(sb.meta_size) + " (" +
           format_size(sb.meta_size / g.member_count) + " per member)");
  line(out, "generation:", std::to_string(sb.generation));
  line(out, "superblocks:", superblock_copies_text(e));
  MountState st = mount_state(e);
  line(out, "state:", st.name + ": " + st.detail);
  if (r) {
    line(out, "last mount:",
         utc_time(r->mount_time) + " on " + r->mountpoint + (r->hostname.empty() ? "" : " (host " + r->hostname + ")"));
  } else {
    line(out, "last mount:", "(not recorded)");
  }
  out += "  members (index, member uuid, last-known path):\n";
  out += describe_members(sb, [&](uint32_t i) {
    std::optional<std::string> last = last_known_path(r, i);
    if (i != sb.member_index) return last.value_or("(not recorded)");
    return e.path + "  (this member" + (last && *last != e.path ? "; last mounted as " + *last : "") + ")";
  });
  return out;
}

json json_report(const MemberExamination& e) {
  json j = {{"path", e.path}, {"member", e.is_member()}, {"block_device", e.is_block_device}, {"size", e.size_bytes}};
  if (!e.is_member()) {
    j["problem"] = non_member_text(e);
    j["foreign_signature"] = e.foreign_signature ? json(*e.foreign_signature) : json(nullptr);
    return j;
  }
  const Superblock& sb = *e.superblock;
  VolumeGeometry g = sb.geometry();
  j["label"] = sb.label;
  j["volume_uuid"] = sb.volume_uuid.to_string();
  j["member_uuid"] = sb.member_uuid.to_string();
  j["member_index"] = sb.member_index;
  j["member_count"] = g.member_count;
  j["creation_time"] = sb.creation_time;
  j["format_version"] = sb.format_version;
  j["layout_version"] = sb.layout_version;
  j["block_size"] = sb.block_size;
  j["stripe_unit"] = g.stripe_unit;
  j["data_start"] = g.data_start;
  j["member_data_size"] = g.member_data_size;
  j["volume_size"] = g.volume_size();
  j["meta_offset"] = sb.meta_offset;
  j["meta_size"] = sb.meta_size;
  j["generation"] = sb.generation;
  j["superblock_copy"] = e.from_backup ? "backup" : "primary";
  j["superblocks"] = superblock_copies_text(e);
  MountState st = mount_state(e);
  j["state"] = st.name;
  j["state_detail"] = st.detail;
  const MountRecord* r = e.mount_record ? &*e.mount_record : nullptr;
  if (r) {
    j["last_mount"] = {{"time", r->mount_time},
                       {"mountpoint", r->mountpoint},
                       {"host", r->hostname},
                       {"unmount_time", r->unmount_time == 0 ? json(nullptr) : json(r->unmount_time)}};
  } else {
    j["last_mount"] = nullptr;
  }
  json members = json::array();
  for (uint32_t i = 0; i < g.member_count; ++i) {
    json m = member_json(sb, r, i);
    m["this_member"] = i == sb.member_index;
    members.push_back(m);
  }
  j["members"] = members;
  return j;
}

}  // namespace

int cmd_examine(int argc, char** argv) {
  po::options_description opts(
      "usage: peregrine examine [--json] MEMBER...\n\n"
      "Prints what each MEMBER (device or file) records about itself: label,\n"
      "volume and member UUIDs, its index, the geometry, whether the volume was\n"
      "unmounted cleanly, the last mount (time, mount point, host) and the\n"
      "last-known path of every other member. Each member is read on its own,\n"
      "the others need not be present. Reads only (a member in use can be\n"
      "examined). Exit status: 0 all are members, 1 otherwise.\n\noptions");
  bool as_json = false;
  opts.add_options()("help,h", "print this help")("json", po::bool_switch(&as_json), "print a JSON array");
  po::variables_map vm;
  std::vector<std::string> paths;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &paths, &error)) {
    std::fprintf(stderr, "peregrine examine: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "peregrine examine: no members given\n\n");
    std::cerr << opts << "\n";
    return 2;
  }
  int rc = 0;
  json all = json::array();
  bool first = true;
  for (const std::string& p : paths) {
    auto e = examine_member(absolute_path(p), /*probe_foreign=*/true);
    if (!e) {
      std::fprintf(stderr, "peregrine examine: %s\n", e.status().message().c_str());
      if (as_json) all.push_back({{"path", p}, {"member", false}, {"problem", e.status().message()}});
      rc = 1;
      continue;
    }
    if (!e->is_member()) rc = 1;
    if (!e->mount_record_problem.empty())
      std::fprintf(stderr, "peregrine examine: warning: %s\n", e->mount_record_problem.c_str());
    if (as_json) {
      all.push_back(json_report(*e));
    } else {
      std::printf("%s%s", first ? "" : "\n", text_report(*e).c_str());
      first = false;
    }
  }
  if (as_json) std::printf("%s\n", all.dump(2).c_str());
  return rc;
}

}  // namespace peregrine::cli
