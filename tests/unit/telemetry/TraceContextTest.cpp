// W3C trace context (telemetry/TraceContext.cpp): the traceparent grammar read strictly, with
// the attack table first (every malformed value starts a new trace: nothing of it is kept), the
// tracestate list grammar, the identifiers and the ratio sampler.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "telemetry/TraceContext.hpp"

namespace sluice::telemetry {
namespace {
namespace trace_context_test {

constexpr const char* kGood = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ReadsTheW3cExample) {
  auto tp = parseTraceparent(kGood);
  ASSERT_TRUE(tp);
  EXPECT_EQ(hex(tp->trace.b), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(hex(tp->parent.b), "00f067aa0ba902b7");
  EXPECT_TRUE(tp->sampled());
  auto unsampled = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled());
  // Other flag bits are kept; only bit 0 means sampled.
  auto other = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->sampled());
}

TEST(Traceparent, AFutureVersionIsReadByItsFirstFields) {
  EXPECT_TRUE(parseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_TRUE(parseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"));
  EXPECT_FALSE(parseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.what"));
}

TEST(Traceparent, AttackTable) {
  const std::string cases[] = {
      "",
      "00",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 is exact
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  // upper-case hex
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // all-zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
      "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // not hex
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",   // wrong separators
      "00-4bf92f3577b34da6a3ce929d0e0e47360-0f067aa0ba902b7-01",   // fields shifted
      " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // whitespace inside the value
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx-injected: 1",    // a second header smuggled
      std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\0", 56),  // NUL
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01,00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00--bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      std::string(4096, 'a'),
  };
  for (const auto& c : cases) EXPECT_FALSE(parseTraceparent(c)) << "accepted: " << c;
}

TEST(Tracestate, PassesAWellFormedList) {
  EXPECT_EQ(checkTracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  // Blanks around commas and empty members are allowed; what is passed on is the members alone.
  EXPECT_EQ(checkTracestate(" rojo=1 , tenant@vendor=x "), "rojo=1,tenant@vendor=x");
  EXPECT_EQ(checkTracestate("a=1,,b=2"), "a=1,b=2");
  EXPECT_EQ(checkTracestate("a=1,\tb=2"), "a=1,b=2");
}

TEST(Tracestate, AttackTable) {
  std::string thirtyThree;
  for (int i = 0; i < 33; ++i) thirtyThree += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  const std::string cases[] = {
      "",
      ",",
      "rojo",                        // no value
      "Rojo=1",                      // upper-case key
      "1rojo=1",                     // a simple key starts with a letter
      "rojo=",                       // empty value
      "rojo=a,b",                    // a member without '='
      "rojo=a=b",                    // '=' in a value
      "rojo=1\tx",                   // control byte
      "rojo=caf\xc3\xa9",            // not ASCII
      "rojo=1 ",                     // (the trailing space trimmed is fine, see below)
      "@vendor=1",                   // empty tenant
      "tenant@=1",                   // empty system
      "tenant@toolongsystemid15=1",  // system id over 14
      thirtyThree,                   // 33 members
      std::string(513, 'a'),         // over 512 bytes
      "rojo=1\r\nx-injected: 1",
  };
  for (const auto& c : cases) {
    if (c == "rojo=1 ") {
      EXPECT_EQ(checkTracestate(c), "rojo=1");
      continue;
    }
    EXPECT_FALSE(checkTracestate(c)) << "accepted: " << c;
  }
}

TEST(TraceIds, AreRandomAndNeverZero) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto t = newTraceId();
    auto s = newSpanId();
    EXPECT_TRUE(t.valid());
    EXPECT_TRUE(s.valid());
    seen.insert(hex(t.b));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(TraceIds, FormatRoundTrips) {
  auto t = newTraceId();
  auto s = newSpanId();
  const std::string v = formatTraceparent(t, s, true);
  auto tp = parseTraceparent(v);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->trace, t);
  EXPECT_EQ(tp->parent, s);
  EXPECT_TRUE(tp->sampled());
  EXPECT_EQ(formatTraceparent(t, s, false).substr(53), "00");
}

TEST(Sampler, RatioBoundsAndAgreement) {
  int kept = 0;
  for (int i = 0; i < 20000; ++i) {
    auto t = newTraceId();
    EXPECT_TRUE(sampledByRatio(t, 1.0));
    EXPECT_FALSE(sampledByRatio(t, 0.0));
    // A trace kept at a ratio is kept at every higher ratio (one threshold on the same number).
    if (sampledByRatio(t, 0.25)) {
      ++kept;
      EXPECT_TRUE(sampledByRatio(t, 0.5));
    }
  }
  EXPECT_GT(kept, 4000);  // 5000 expected; the bound is far outside chance
  EXPECT_LT(kept, 6000);
}

}  // namespace trace_context_test
}  // namespace
}  // namespace sluice::telemetry
