// The name of the extended attribute of a mount's root under which the
// daemon publishes its statistics document (JSON, fields in docs/usage.md
// section 5): the daemon serves it, `peregrine stats` and the unmount
// helper read it. One definition, so the two sides cannot drift apart.
//
// Thread rules: a constant.
#pragma once

namespace peregrine::fs {

inline constexpr const char* kStatsXattr = "user.peregrine.stats";

}  // namespace peregrine::fs
