// PEREGRINE_TEST_FAULTS parsing: what a rule becomes, and that a bad rule
// is refused naming the rule and the problem (a test that mistypes a fault
// must not silently run without it).
#include "test_faults.h"

#include <gtest/gtest.h>

namespace peregrine::fs {
namespace {

const MemberAreas kAreas{4, 1 << 20, 5 << 20, 64 << 20};

TEST(TestFaults, RulesBecomeFaultRulesOfTheirMember) {
  auto r = parse_test_faults(
      "member=2,action=eio,op=read,while=/tmp/x;member=1,action=hold,while=/a/b,area=meta,times=3", kAreas);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].first, 2u);
  EXPECT_EQ((*r)[0].second.action, FaultRule::Action::fail);
  EXPECT_EQ((*r)[0].second.errnum, EIO);
  EXPECT_EQ((*r)[0].second.op, IoOp::read);
  EXPECT_EQ((*r)[0].second.armed_while, "/tmp/x");
  EXPECT_EQ((*r)[0].second.times, 0u) << "every matching IO by default";
  EXPECT_EQ((*r)[1].first, 1u);
  EXPECT_EQ((*r)[1].second.action, FaultRule::Action::hold);
  EXPECT_EQ((*r)[1].second.range_begin, 1u << 20);
  EXPECT_EQ((*r)[1].second.range_end, 5u << 20);
  EXPECT_EQ((*r)[1].second.times, 3u);
  auto gone = parse_test_faults("member=3,action=enodev,area=data", kAreas);
  ASSERT_TRUE(gone);
  EXPECT_EQ((*gone)[0].second.errnum, ENODEV);
  EXPECT_EQ((*gone)[0].second.range_begin, 5u << 20);
  EXPECT_EQ((*gone)[0].second.range_end, 64u << 20);
}

TEST(TestFaults, BadRulesAreRefusedByName) {
  struct Case {
    const char* spec;
    const char* says;
  } cases[] = {
      {"member=4,action=eio", "member must be an index below 4"},
      {"member=1,action=explode", "action must be eio, enodev or hold"},
      {"member=1,action=hold", "hold needs while=PATH"},
      {"member=1,action=eio,while=relative", "absolute path"},
      {"member=1,action=eio,op=trim", "op must be read, write or flush"},
      {"member=1,action=eio,area=journal", "area must be meta or data"},
      {"member=1,action=eio,colour=red", "unknown key 'colour'"},
      {"action=eio", "member and action are required"},
      {"member=1,action", "is not KEY=VALUE"},
  };
  for (const Case& c : cases) {
    auto r = parse_test_faults(c.spec, kAreas);
    ASSERT_FALSE(r) << c.spec;
    EXPECT_EQ(r.status().errnum(), EINVAL);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(std::string("PEREGRINE_TEST_FAULTS: rule '") + c.spec + "'"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace peregrine::fs
