// One value of every TOML type, and the type each kind of option takes:
// the table the wrong-type tests walk (tests/config/wrong_type_test.cpp for
// the parser, tests/tools/config_check_test.cpp for the commands' exit codes).
//
// Threads: constant data; read from anywhere.
#pragma once

#include <string>
#include <vector>

#include "peregrine/config/options.h"

namespace peregrine::config::testing {

// How a value is written, the type name a refusal gives, and how the
// refusal quotes it back.
struct TomlSample {
  const char* type;
  const char* text;
  const char* shown;
};

inline const std::vector<TomlSample>& toml_samples() {
  static const std::vector<TomlSample> all = {
      {"boolean", "true", "true"},
      {"boolean", "false", "false"},
      {"integer", "7", "7"},
      {"float", "1.5", "1.5"},
      {"float", "inf", "inf"},
      {"string", "\"four\"", "\"four\""},
      {"array", "[1, 2]", "[1, 2]"},
      {"array", "[]", "[]"},
      {"table", "{ a = 1 }", "{ a = 1 }"},
      {"date", "1979-05-27", "1979-05-27"},
      {"time", "07:32:00", "07:32:00"},
      {"date-time", "1979-05-27T07:32:00Z", "1979-05-27T07:32:00Z"},
      {"date-time", "1979-05-27T07:32:00", "1979-05-27T07:32:00"},
  };
  return all;
}

// The one TOML type an option of this kind takes.
inline std::string own_type(const Option& o) {
  switch (o.kind) {
    case Kind::kBool: return "boolean";
    case Kind::kInteger: return "integer";
    case Kind::kChoice:
    case Kind::kCpuList: return "string";
  }
  return "";
}

}  // namespace peregrine::config::testing
