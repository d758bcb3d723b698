// Which channel holds each file and batch: learned from the answers, bounded, and only for ids
// that may go into a path.
#include "gateway/ObjectRoutes.hpp"

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

TEST(ObjectRoutes, LearnsTheIdsAnAnswerNames) {
  ObjectRoutes r;
  r.learnFrom(R"({"id":"batch_1","object":"batch","input_file_id":"file-in","output_file_id":"file-out",
                 "error_file_id":null})",
              "beta");
  EXPECT_EQ(r.channelOf("batch_1"), "beta");
  EXPECT_EQ(r.channelOf("file-in"), "beta");
  EXPECT_EQ(r.channelOf("file-out"), "beta");
  r.learnFrom(R"({"object":"list","data":[{"id":"file-a"},{"id":"file-b"},7],"first_id":"file-x"})", "alpha");
  EXPECT_EQ(r.channelOf("file-a"), "alpha");
  EXPECT_EQ(r.channelOf("file-b"), "alpha");
  EXPECT_FALSE(r.channelOf("file-x"));
  r.forget("file-a");
  EXPECT_FALSE(r.channelOf("file-a"));
  r.learnFrom("not json", "alpha");
  r.learnFrom(R"({"id":"../../admin"})", "alpha");  // never a path segment: not kept
  EXPECT_FALSE(r.channelOf("../../admin"));
}

TEST(ObjectRoutes, ForgetsTheOldestPastItsBound) {
  ObjectRoutes r(2);
  r.remember("a", "x");
  r.remember("b", "x");
  r.remember("a", "y");  // known: updated, not added again
  EXPECT_EQ(r.channelOf("a"), "y");
  r.remember("c", "x");
  EXPECT_FALSE(r.channelOf("a"));
  EXPECT_EQ(r.channelOf("b"), "x");
  EXPECT_EQ(r.channelOf("c"), "x");
  EXPECT_EQ(r.size(), 2u);
}

}  // namespace
}  // namespace sluice::gateway
