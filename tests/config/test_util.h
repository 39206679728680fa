// Helpers for the config tests: parse text as a named file, compare settings.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "peregrine/config/load.h"
#include "peregrine/config/options.h"

namespace peregrine::config::testing {

inline constexpr const char* kFile = "test.conf";

// Every option's value, in table order: equal vectors = equal settings.
inline std::vector<Value> values(const Settings& s) {
  std::vector<Value> out;
  for (const Option& o : options()) out.push_back(o.load(s));
  return out;
}

inline Config parse_ok(const std::string& text) {
  auto c = parse_text(text, kFile);
  EXPECT_TRUE(c) << c.status().message();
  return c ? *c : Config{};
}

// The refusal message of `text`, failing the test if it was accepted.
inline std::string refusal_of(const std::string& text) {
  auto c = parse_text(text, kFile);
  EXPECT_FALSE(c) << "accepted:\n" << text;
  return c ? std::string() : c.status().message();
}

}  // namespace peregrine::config::testing
