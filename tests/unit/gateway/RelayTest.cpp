// The relay's check of the field lines a stage adds to an upstream attempt's head
// (UpstreamAttempt::header_lines): what passes is whole "name: value\r\n" lines; anything that
// could end the head early, start a second request, fold a header or frame the body another way
// is refused whole.
#include <gtest/gtest.h>

#include <string>

#include "gateway/Relay.hpp"

namespace sluice::gateway::relay {
namespace {
namespace relay_test {

TEST(RelayStageHeaderLines, WholeFieldLinesPass) {
  EXPECT_TRUE(wellFormedFieldLines(""));
  EXPECT_TRUE(wellFormedFieldLines("X-Trace: abc\r\n"));
  EXPECT_TRUE(wellFormedFieldLines("X-Trace: abc\r\nOpenAI-Organization: org-1\r\n"));
  EXPECT_TRUE(wellFormedFieldLines("X-Empty:\r\n"));
  EXPECT_TRUE(wellFormedFieldLines("x!#$%&'*+-.^_`|~9: v\r\n"));
}

TEST(RelayStageHeaderLines, AnythingThatCouldSmuggleIsRefused) {
  const std::string attacks[] = {
      "X-Trace: abc",                                             // no CRLF: would run into the next line
      "X-Trace: abc\n",                                           // bare LF
      "X-Trace: a\rb\r\n",                                        // bare CR in the value
      "X-Trace: a\nb\r\n",                                        // LF in the value
      std::string("X-Trace: a\0b\r\n", 14),                       // NUL in the value
      "X-Trace: abc\r\n\r\n",                                     // an empty line ends the head
      "X-Trace: abc\r\n\r\nPOST /admin HTTP/1.1\r\nHost: x\r\n",  // a second request after it
      " X-Trace: folded\r\n",                                     // obs-fold / leading space
      "X Trace: abc\r\n",                                         // space in the name
      ": no-name\r\n",                                            // empty name
      "NoColon\r\n",                                              // no colon at all
      "X-Tr\xc3\xa9" "ce: abc\r\n",                           // non-token bytes in the name
      "Transfer-Encoding : chunked\r\n",                          // space before the colon
      "Content-Length: 5\r\n",                                    // a second length: a desync
      "transfer-encoding: chunked\r\n",                           // framing is the relay's
      "Host: elsewhere.example\r\n",                              // so is the Host
      "X-Ok: 1\r\nConnection: close\r\n",                         // one bad line refuses them all
  };
  for (const auto& a : attacks) EXPECT_FALSE(wellFormedFieldLines(a)) << a;
}

}  // namespace relay_test
}  // namespace
}  // namespace sluice::gateway::relay
