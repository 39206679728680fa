#include "test_faults.h"

#include <cerrno>
#include <charconv>
#include <sstream>

namespace peregrine::fs {
namespace {

bool to_u64(const std::string& s, uint64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

Expected<std::vector<std::pair<uint32_t, FaultRule>>> parse_test_faults(const std::string& spec,
                                                                        const MemberAreas& areas) {
  std::vector<std::pair<uint32_t, FaultRule>> out;
  std::stringstream rules(spec);
  std::string text;
  while (std::getline(rules, text, ';')) {
    if (text.empty()) continue;
    auto bad = [&](const std::string& why) {
      return Status::error(EINVAL, std::string(kTestFaultsEnv) + ": rule '" + text + "': " + why);
    };
    FaultRule r;
    r.times = 0;
    bool have_member = false, have_action = false;
    uint64_t member = 0;
    std::stringstream fields(text);
    std::string kv;
    while (std::getline(fields, kv, ',')) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) return bad("'" + kv + "' is not KEY=VALUE");
      std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "member") {
        if (!to_u64(v, &member) || member >= areas.members)
          return bad("member must be an index below " + std::to_string(areas.members));
        have_member = true;
      } else if (k == "action") {
        have_action = true;
        if (v == "eio") {
          r.action = FaultRule::Action::fail;
          r.errnum = EIO;
        } else if (v == "enodev") {
          r.action = FaultRule::Action::fail;
          r.errnum = ENODEV;
        } else if (v == "hold") {
          r.action = FaultRule::Action::hold;
        } else {
          return bad("action must be eio, enodev or hold");
        }
      } else if (k == "while") {
        if (v.empty() || v[0] != '/') return bad("while needs an absolute path");
        r.armed_while = v;
      } else if (k == "op") {
        if (v == "read")
          r.op = IoOp::read;
        else if (v == "write")
          r.op = IoOp::write;
        else if (v == "flush")
          r.op = IoOp::flush;
        else
          return bad("op must be read, write or flush");
      } else if (k == "area") {
        if (v == "meta") {
          r.range_begin = areas.meta_begin;
          r.range_end = areas.meta_end;
        } else if (v == "data") {
          r.range_begin = areas.meta_end;
          r.range_end = areas.data_end;
        } else {
          return bad("area must be meta or data");
        }
      } else if (k == "times") {
        uint64_t t = 0;
        if (!to_u64(v, &t) || t > UINT32_MAX) return bad("times must be a count");
        r.times = static_cast<uint32_t>(t);
      } else {
        return bad("unknown key '" + k + "' (member, action, while, op, area, times)");
      }
    }
    if (!have_member || !have_action) return bad("member and action are required");
    if (r.action == FaultRule::Action::hold && r.armed_while.empty())
      return bad("hold needs while=PATH (the IO is released when PATH is removed)");
    out.emplace_back(static_cast<uint32_t>(member), std::move(r));
  }
  return out;
}

Expected<TestPowerCut> parse_test_power_cut(const std::string& spec) {
  TestPowerCut out;
  std::stringstream parts(spec);
  std::string text;
  std::getline(parts, out.dir, ',');
  if (out.dir.empty() || out.dir[0] != '/')
    return Status::error(EINVAL, std::string(kTestPowerCutEnv) + ": '" + spec + "': give an absolute directory first");
  while (std::getline(parts, text, ',')) {
    const std::string key = "kill_at_io=";
    if (!text.starts_with(key) || !to_u64(text.substr(key.size()), &out.kill_at_io))
      return Status::error(EINVAL, std::string(kTestPowerCutEnv) + ": '" + text + "': expected kill_at_io=N");
  }
  return out;
}

}  // namespace peregrine::fs
