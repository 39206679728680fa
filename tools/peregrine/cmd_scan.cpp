// `peregrine scan [DIR|DEVICE|FILE...]`: finds peregrine members, groups
// them by volume and prints, for each complete volume, a `[volume.NAME]`
// section for peregrine.conf and an /etc/fstab line; an incomplete volume is
// reported with the index, UUID and last-known path of every missing member.
// Without arguments it looks at every block device (/sys/class/block); a
// DIR is searched for regular files (not recursively). Reads only, takes no
// lock and opens devices without O_EXCL: members in use are found too.
// Exit codes: 0 every volume found is complete (or none was found), 1 some
// volume is incomplete or a member appears twice, 2 bad command line.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
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
namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: peregrine scan [--conf | --fstab | --json] [DIR|DEVICE|FILE...]\n\n"
    "Finds peregrine members and groups them by volume. For each complete volume\n"
    "prints a [volume.NAME] section for /etc/peregrine/peregrine.conf and an\n"
    "/etc/fstab line; an incomplete volume is reported with its missing members\n"
    "(index, UUID, last-known path). Without arguments every block device is\n"
    "looked at; a DIR is searched for member files (not recursively). Reads only;\n"
    "devices in use are read too. Exit status: 0 all volumes found are complete,\n"
    "1 some volume is incomplete or has a member twice.\n\noptions";

struct Candidate {
  std::string path;
  bool given;  // named on the command line (errors are reported) rather than found
};

// Every block device the kernel lists, as /dev/NAME.
std::vector<Candidate> all_block_devices() {
  std::vector<Candidate> out;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator("/sys/class/block", ec)) {
    std::string dev = "/dev/" + d.path().filename().string();
    struct stat st {};
    if (::stat(dev.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) out.push_back({dev, false});
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  return out;
}

// The regular files of `dir` (symbolic links not followed: a link to a
// member would be the same member twice).
std::vector<Candidate> files_in(const std::string& dir) {
  std::vector<Candidate> out;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
    std::error_code e2;
    if (d.symlink_status(e2).type() == fs::file_type::regular) out.push_back({d.path().string(), false});
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  return out;
}

// A name that survives reboots and re-cabling for a block device: its
// /dev/disk/by-id link (the first in name order, preferring not wwn- names,
// which are less readable), else the path as found.
std::string stable_name(const MemberExamination& e) {
  if (!e.is_block_device) return e.path;
  struct stat target {};
  if (::stat(e.path.c_str(), &target) != 0) return e.path;
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator("/dev/disk/by-id", ec)) {
    struct stat st {};
    if (::stat(d.path().c_str(), &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == target.st_rdev)
      names.push_back(d.path().string());
  }
  if (names.empty()) return e.path;
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    bool wa = a.find("/wwn-") != std::string::npos, wb = b.find("/wwn-") != std::string::npos;
    return wa != wb ? !wa : a < b;
  });
  return names.front();
}

// A [volume.NAME] name: 1..64 letters, digits, '-' and '_'.
std::string volume_name(const Superblock& sb) {
  std::string name;
  for (char c : sb.label) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  if (name.size() > 64) name.resize(64);
  if (name.find_first_not_of('_') == std::string::npos) name = "vol-" + sb.volume_uuid.to_string().substr(0, 8);
  return name;
}

// A TOML basic string.
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// An fstab field: spaces, tabs, newlines and backslashes as octal escapes.
std::string fstab_field(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

struct Volume {
  Superblock sb;  // of the member with the highest generation
  std::string name;
  std::map<uint32_t, std::vector<std::string>> found;  // index -> stable paths (more than one: a copy)
  const MountRecord* last_mount = nullptr;             // the newest mount record among the members
  std::vector<MemberExamination> members;

  bool complete() const { return found.size() == sb.member_count(); }
  bool duplicated() const {
    return std::any_of(found.begin(), found.end(), [](const auto& f) { return f.second.size() > 1; });
  }
  std::vector<std::string> member_list() const {
    std::vector<std::string> out;
    for (const auto& [i, paths] : found) out.push_back(paths.front());
    return out;
  }
  std::string mountpoint() const { return last_mount ? last_mount->mountpoint : ""; }
};

std::string summary(const Volume& v) {
  VolumeGeometry g = v.sb.geometry();
  std::string s = "volume " + v.sb.volume_uuid.to_string() +
                  (v.sb.label.empty() ? " (no label)" : " (label " + v.sb.label + ")") + ": " +
                  std::to_string(v.found.size()) + " of " + std::to_string(g.member_count) + " members found, " +
                  format_size(g.volume_size()) + ", stripe unit " + format_size(g.stripe_unit) + ", created " +
                  utc_time(v.sb.creation_time);
  return s;
}

std::string missing_text(const Volume& v, uint32_t i) {
  std::string last = last_known_path(v.last_mount, i).value_or("");
  return "index " + std::to_string(i) + " (member " + v.sb.member_uuids[i].to_string() + ", " +
         (last.empty() ? "no path recorded" : "last seen as " + last) + ")";
}

std::string conf_section(const Volume& v) {
  std::string out = "[volume." + v.name + "]\nmembers = [";
  std::vector<std::string> list = v.member_list();
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + toml_string(list[i]);
  out += "]\n";
  if (!v.mountpoint().empty())
    out += "mountpoint = " + toml_string(v.mountpoint()) + "\n";
  else
    out += "#mountpoint = " + toml_string("/mnt/" + v.name) + "   # no mount recorded: choose one\n";
  return out;
}

std::string fstab_line(const Volume& v) {
  std::string source;
  for (const std::string& m : v.member_list()) source += (source.empty() ? "" : ",") + m;
  std::string mnt = v.mountpoint().empty() ? "/mnt/" + v.name : v.mountpoint();
  return fstab_field(source) + "  " + fstab_field(mnt) + "  peregrine  nofail  0  0\n";
}

struct ScanArgs {
  bool as_json = false, conf_only = false, fstab_only = false;
  std::vector<std::string> paths;
};

// The command line; an exit code when there is nothing more to do (help,
// or a usage error).
std::optional<int> parse_scan_args(int argc, char** argv, ScanArgs* a) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")("conf", po::bool_switch(&a->conf_only),
                                                  "print only the peregrine.conf sections")(
      "fstab", po::bool_switch(&a->fstab_only), "print only the fstab lines")("json", po::bool_switch(&a->as_json),
                                                                              "print a JSON document");
  po::variables_map vm;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &a->paths, &error)) {
    std::fprintf(stderr, "peregrine scan: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (int(a->as_json) + int(a->conf_only) + int(a->fstab_only) > 1) {
    std::fprintf(stderr, "peregrine scan: --conf, --fstab and --json exclude each other\n");
    return 2;
  }
  return std::nullopt;
}

// What to look at: every block device without arguments, else each
// device or file named and the regular files of each directory. An exit
// code when an argument is none of those.
std::optional<int> gather_candidates(const std::vector<std::string>& args, std::vector<Candidate>* candidates) {
  if (args.empty()) *candidates = all_block_devices();
  for (const std::string& a : args) {
    struct stat st {};
    if (::stat(a.c_str(), &st) != 0) {
      std::fprintf(stderr, "peregrine scan: %s: %s\n", a.c_str(), std::strerror(errno));
      return 2;
    }
    if (S_ISDIR(st.st_mode)) {
      for (Candidate& c : files_in(a)) candidates->push_back({absolute_path(c.path), false});
    } else if (S_ISBLK(st.st_mode) || S_ISREG(st.st_mode)) {
      candidates->push_back({absolute_path(a), true});
    } else {
      std::fprintf(stderr, "peregrine scan: %s: not a directory, block device or regular file\n", a.c_str());
      return 2;
    }
  }
  return std::nullopt;
}

// Examines each candidate once and groups the members by volume.
std::map<Uuid, Volume> group_members(const std::vector<Candidate>& candidates) {
  std::map<Uuid, Volume> volumes;
  std::set<std::string> seen;
  for (const Candidate& c : candidates) {
    if (!seen.insert(c.path).second) continue;
    auto e = examine_member(c.path, /*probe_foreign=*/false);
    if (!e) {
      // A device that cannot be opened (no medium, not permitted) is only
      // worth a word when it was asked for.
      if (c.given) std::fprintf(stderr, "peregrine scan: %s\n", e.status().message().c_str());
      continue;
    }
    if (!e->is_member()) {
      if (c.given) std::fprintf(stderr, "peregrine scan: %s: not a peregrine member\n", c.path.c_str());
      if (e->copies.any_magic())
        std::fprintf(stderr,
                     "peregrine scan: %s: damaged peregrine member (no valid superblock copy); see "
                     "'peregrine examine %s'\n",
                     c.path.c_str(), c.path.c_str());
      continue;
    }
    const Superblock& sb = *e->superblock;
    auto [it, fresh] = volumes.try_emplace(sb.volume_uuid);
    Volume& v = it->second;
    if (fresh || sb.generation > v.sb.generation) v.sb = sb;
    v.found[sb.member_index].push_back(stable_name(*e));
    v.members.push_back(std::move(*e));
  }
  return volumes;
}

// Names and last mounts, once every member is in place (pointers into
// `members` are stable from here on).
void name_volumes(std::map<Uuid, Volume>& volumes) {
  std::set<std::string> names;
  for (auto& [uuid, v] : volumes) {
    for (const MemberExamination& e : v.members)
      if (e.mount_record && (!v.last_mount || e.mount_record->mount_time > v.last_mount->mount_time))
        v.last_mount = &*e.mount_record;
    v.name = volume_name(v.sb);
    if (!names.insert(v.name).second) {
      v.name += "-" + uuid.to_string().substr(0, 8);
      names.insert(v.name);
    }
  }
}

json volume_json(const Uuid& uuid, const Volume& v) {
  json jv = {{"name", v.name},           {"volume_uuid", uuid.to_string()},
             {"label", v.sb.label},      {"member_count", v.sb.member_count()},
             {"complete", v.complete()}, {"mountpoint", v.mountpoint().empty() ? json(nullptr) : json(v.mountpoint())}};
  json members = json::array();
  for (uint32_t i = 0; i < v.sb.member_count(); ++i) {
    auto f = v.found.find(i);
    json m = member_json(v.sb, v.last_mount, i);
    m["paths"] = f == v.found.end() ? json::array() : json(f->second);
    members.push_back(m);
  }
  jv["members"] = members;
  return jv;
}

// Comment lines on the members missing (and a word on stderr).
std::string missing_members_text(const Uuid& uuid, const Volume& v, const std::vector<uint32_t>& missing) {
  std::string out =
      "# INCOMPLETE: " + std::to_string(missing.size()) + " member" + (missing.size() > 1 ? "s" : "") + " missing:\n";
  for (uint32_t i : missing) out += "#   " + missing_text(v, i) + "\n";
  std::fprintf(stderr, "peregrine scan: volume %s%s is incomplete: %zu of %u members missing\n",
               uuid.to_string().c_str(), v.sb.label.empty() ? "" : (" (" + v.sb.label + ")").c_str(), missing.size(),
               v.sb.member_count());
  return out;
}

// Comment lines on the members found more than once (and a word on stderr
// for each).
std::string duplicated_members_text(const Uuid& uuid, const Volume& v) {
  std::string out;
  for (const auto& [i, paths] : v.found) {
    if (paths.size() < 2) continue;
    out += "# member index " + std::to_string(i) + " found " + std::to_string(paths.size()) + " times (a copy?):";
    for (const std::string& p : paths) out += " " + p;
    out += "\n";
    // One member at two generations: a copy that an interrupted
    // `peregrine replace` made, one generation on (docs/format.md, section 9).
    std::set<uint64_t> generations;
    for (const MemberExamination& e : v.members)
      if (e.superblock->member_index == i) generations.insert(e.superblock->generation);
    if (generations.size() > 1)
      out += "#   at generations " + std::to_string(*generations.begin()) + " and " +
             std::to_string(*generations.rbegin()) +
             ": an interrupted 'peregrine replace' leaves this (the higher one is the new member); run "
             "it again to finish\n";
    std::fprintf(stderr, "peregrine scan: volume %s: member index %u found %zu times\n", uuid.to_string().c_str(), i,
                 paths.size());
  }
  return out;
}

// What scan prints: the JSON document, or the conf sections, fstab lines
// and the volumes that cannot be mounted as found.
struct ScanReport {
  int rc = 0;
  json doc = {{"volumes", json::array()}};
  std::string conf, fstab, problems;
};

void report_volume(const Uuid& uuid, const Volume& v, ScanReport& out) {
  std::vector<uint32_t> missing;
  for (uint32_t i = 0; i < v.sb.member_count(); ++i)
    if (!v.found.count(i)) missing.push_back(i);
  if (!missing.empty() || v.duplicated()) out.rc = 1;
  json jv = volume_json(uuid, v);
  std::string head = "# " + summary(v) + "\n";
  if (v.last_mount)
    head += "# last mounted " + utc_time(v.last_mount->mount_time) + " on " + v.last_mount->mountpoint + "\n";
  std::string trouble;
  if (!missing.empty()) trouble += missing_members_text(uuid, v, missing);
  trouble += duplicated_members_text(uuid, v);
  if (trouble.empty()) {
    jv["conf"] = conf_section(v);
    jv["fstab"] = fstab_line(v);
    out.conf += "\n" + head + conf_section(v);
    out.fstab += head;
    if (v.mountpoint().empty()) out.fstab += "# no mount recorded: the mount point is a suggestion\n";
    out.fstab += fstab_line(v);
  } else {
    jv["conf"] = nullptr;
    jv["fstab"] = nullptr;
    out.problems += "\n" + head + trouble;
  }
  out.doc["volumes"].push_back(jv);
}

int print_report(const ScanArgs& a, const ScanReport& r, bool found_any) {
  if (a.as_json) {
    std::printf("%s\n", r.doc.dump(2).c_str());
    return r.rc;
  }
  if (!found_any) {
    std::fprintf(stderr, "peregrine scan: no peregrine members found\n");
    return r.rc;
  }
  if (!a.fstab_only && !r.conf.empty()) std::printf("# for /etc/peregrine/peregrine.conf:\n%s", r.conf.c_str());
  if (!a.conf_only && !r.fstab.empty())
    std::printf("%s# for /etc/fstab:\n%s", a.fstab_only || r.conf.empty() ? "" : "\n", r.fstab.c_str());
  if (!r.problems.empty())
    std::printf("%s# not mountable as found:%s", r.conf.empty() && r.fstab.empty() ? "" : "\n", r.problems.c_str());
  return r.rc;
}

}  // namespace

int cmd_scan(int argc, char** argv) {
  ScanArgs a;
  if (auto rc = parse_scan_args(argc, argv, &a)) return *rc;
  std::vector<Candidate> candidates;
  if (auto rc = gather_candidates(a.paths, &candidates)) return *rc;
  std::map<Uuid, Volume> volumes = group_members(candidates);
  name_volumes(volumes);
  ScanReport report;
  for (const auto& [uuid, v] : volumes) report_volume(uuid, v, report);
  return print_report(a, report, !volumes.empty());
}

}  // namespace peregrine::cli
