#include "peregrine/volume/describe.h"

#include <ctime>

#include "peregrine/volume/size_text.h"

namespace peregrine {
namespace {

void line(std::string& out, const char* key, const std::string& value) {
  out += "  ";
  out += key;
  out += std::string(18 - std::string(key).size(), ' ');
  out += value;
  out += '\n';
}

}  // namespace

std::string utc_time(uint64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    return std::to_string(seconds);
  return buf;
}

std::string describe_members(const Superblock& sb, const std::function<std::string(uint32_t)>& where) {
  std::string out;
  for (uint32_t i = 0; i < sb.member_count(); ++i)
    out += "    " + std::to_string(i) + "  " + sb.member_uuids[i].to_string() + "  " + where(i) + "\n";
  return out;
}

std::string describe_volume(const Superblock& sb, const std::vector<std::string>& member_paths) {
  VolumeGeometry g = sb.geometry();
  std::string out = "volume " + sb.volume_uuid.to_string() + "\n";
  line(out, "label:", sb.label.empty() ? "(none)" : sb.label);
  line(out, "created:", utc_time(sb.creation_time));
  line(out, "format/layout:", std::to_string(sb.format_version) + "/" + std::to_string(sb.layout_version));
  line(out, "members:", std::to_string(g.member_count));
  out += describe_members(sb, [&](uint32_t i) { return i < member_paths.size() ? member_paths[i] : "?"; });
  line(out, "stripe unit:", format_size(g.stripe_unit));
  line(out, "block size:", std::to_string(sb.block_size));
  line(out, "data start:", format_size(g.data_start) + " (member offset)");
  line(out, "member data size:",
       format_size(g.member_data_size) + " (" + std::to_string(g.member_data_size) + " bytes per member)");
  line(out, "volume size:", format_size(g.volume_size()) + " (" + std::to_string(g.volume_size()) + " bytes)");
  line(out, "metadata area:", "offset " + std::to_string(sb.meta_offset) + ", " + format_size(sb.meta_size));
  line(out, "data area:", format_size(g.volume_size() - sb.meta_size));
  return out;
}

}  // namespace peregrine
