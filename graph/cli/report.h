// Output of one peregrine-graph command: an ordered list of named values,
// printed as aligned "name value" lines for people or as one JSON object
// (--json) for scripts such as tools/bench/graph.
// Thread rules: single-threaded.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace peregrine::graph::cli {

class Report {
 public:
  using Value = std::variant<uint64_t, double, bool, std::string>;
  void add(std::string name, Value value) { fields_.emplace_back(std::move(name), std::move(value)); }
  void print_text(std::ostream& out) const;
  void print_json(std::ostream& out) const;

 private:
  std::vector<std::pair<std::string, Value>> fields_;
};

}  // namespace peregrine::graph::cli
