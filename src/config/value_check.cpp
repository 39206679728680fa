// Validation shared by the config file and -o: types, ranges, ordered pairs.
#include "value_check.h"

#include <cerrno>
#include <charconv>
#include <sstream>

namespace peregrine::config::detail {

namespace {

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

// Whether `value` holds the alternative `option`'s kind stores. Every
// caller of std::get on a Value (the table's store functions, the checks
// below) relies on this having been asked first: a Value of any alternative
// reaches check_value from the file and from -o, and the one that does not
// fit must become a refusal, never a bad_variant_access.
bool fits_kind(const Option& option, const Value& value) {
  switch (option.kind) {
    case Kind::kBool: return std::holds_alternative<bool>(value);
    case Kind::kInteger:
      if (const std::string* s = std::get_if<std::string>(&value)) return option.allows_auto && *s == "auto";
      return std::holds_alternative<int64_t>(value);
    case Kind::kChoice:
    case Kind::kCpuList: return std::holds_alternative<std::string>(value);
  }
  return false;
}

}  // namespace

std::string refusal(const Origin& where, std::string_view key, std::string_view value, std::string_view problem,
                    const Option* option, std::string_view allowed) {
  std::string out =
      where.to_string() + ": " + std::string(key) + " = " + std::string(value) + ": " + std::string(problem);
  std::string range = option ? option->allowed() : std::string(allowed);
  if (!range.empty()) out += "; allowed: " + range;
  if (option && !option->unit.empty()) out += " (" + std::string(option->unit) + ")";
  return out;
}

std::string check_value(const Option& option, const Value& value) {
  if (!fits_kind(option, value)) return "wrong type";
  switch (option.kind) {
    case Kind::kBool: return "";
    case Kind::kInteger: {
      const int64_t* n = std::get_if<int64_t>(&value);
      if (!n) return "";  // "auto", allowed (fits_kind)
      if (*n < option.min || *n > option.max) return "out of range";
      if (option.power_of_two && !is_power_of_two(*n)) return "not a power of two";
      return "";
    }
    case Kind::kChoice: {
      const std::string& s = std::get<std::string>(value);
      for (std::string_view c : option.choices)
        if (c == s) return "";
      std::string near = suggest_among(s, option.choices);
      return "unknown value" + (near.empty() ? "" : "; did you mean \"" + near + "\"?");
    }
    case Kind::kCpuList: {
      auto parsed = parse_cpu_affinity(std::get<std::string>(value));
      return parsed ? "" : parsed.status().message();
    }
  }
  return "";
}

std::string node_text(const toml::node& node) {
  // Strings as the user most likely wrote them (toml++ prints 'literal').
  if (auto s = node.as_string()) return format_value(s->get());
  if (auto a = node.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + node_text(*a->get(i));
    return out + "]";
  }
  std::ostringstream os;
  node.visit([&os](const auto& n) { os << n; });
  return os.str();
}

Expected<Value> value_from_node(const Option& option, const toml::node& node, const std::string& file) {
  Origin where{file, static_cast<uint32_t>(node.source().begin.line)};
  Value value;
  if (auto b = node.as_boolean()) {
    value = b->get();
  } else if (auto i = node.as_integer()) {
    value = i->get();
  } else if (auto s = node.as_string()) {
    value = s->get();
  } else {
    return Status::error(EINVAL,
                         refusal(where, option.key, node_text(node), "wrong type (" + type_name(node) + ")", &option));
  }
  std::string problem = check_value(option, value);
  if (problem == "wrong type") problem += " (" + type_name(node) + ")";
  if (!problem.empty()) return Status::error(EINVAL, refusal(where, option.key, node_text(node), problem, &option));
  return value;
}

Expected<Value> value_from_text(const Option& option, std::string_view text, const Origin& where) {
  Value value;
  switch (option.kind) {
    case Kind::kBool:
      if (text == "true")
        value = true;
      else if (text == "false")
        value = false;
      else
        value = std::string(text);  // refused below as wrong type
      break;
    case Kind::kInteger: {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec == std::errc() && end == text.data() + text.size() && !text.empty())
        value = n;
      else
        value = std::string(text);  // "auto", or refused below
      break;
    }
    case Kind::kChoice:
    case Kind::kCpuList: value = std::string(text); break;
  }
  std::string problem = check_value(option, value);
  if (!problem.empty()) return Status::error(EINVAL, refusal(where, option.key, text, problem, &option));
  return value;
}

Status check_order(const Config& config) {
  for (const OrderRule& rule : order_rules()) {
    const Option* low = find_option(rule.low);
    const Option* high = find_option(rule.high);
    Value lo = low->load(config.settings);
    Value hi = high->load(config.settings);
    if (!std::holds_alternative<int64_t>(lo) || !std::holds_alternative<int64_t>(hi)) continue;  // "auto"
    int64_t l = std::get<int64_t>(lo), h = std::get<int64_t>(hi);
    if (rule.strict ? l < h : l <= h) continue;
    // Blame the key the user set (the low one when both are set), and name
    // the other with its origin, so the message points at a line to fix.
    Origin lo_origin = config.origin_of(rule.low);
    Origin hi_origin = config.origin_of(rule.high);
    bool blame_low = !lo_origin.is_default() || hi_origin.is_default();
    const Option* blamed = blame_low ? low : high;
    const Option* other = blame_low ? high : low;
    int64_t v = blame_low ? l : h, o = blame_low ? h : l;
    const Origin& other_origin = blame_low ? hi_origin : lo_origin;
    std::string problem =
        std::string(blame_low ? (rule.strict ? "not below " : "above ") : (rule.strict ? "not above " : "below ")) +
        std::string(other->key) + " = " + std::to_string(o) + " (" + other_origin.to_string() + "), " +
        std::string(rule.why);
    std::string allowed = blame_low ? std::to_string(blamed->min) + ".." + std::to_string(rule.strict ? o - 1 : o)
                                    : std::to_string(rule.strict ? o + 1 : o) + ".." + std::to_string(blamed->max);
    std::string msg = (blame_low ? lo_origin : hi_origin).to_string() + ": " + std::string(blamed->key) + " = " +
                      std::to_string(v) + ": " + problem + "; allowed: " + allowed;
    if (!blamed->unit.empty()) msg += " (" + std::string(blamed->unit) + ")";
    return Status::error(EINVAL, msg);
  }
  return Status::ok();
}

}  // namespace peregrine::config::detail
