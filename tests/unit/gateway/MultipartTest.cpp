// Multipart form bodies: the boundary from the content type, the parts walked by their
// boundaries, and the plain fields the request path reads (a file's bytes are never a field).
#include "gateway/Multipart.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::gateway {
namespace {

const std::string kBody =
    "--b0\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
    "Content-Type: audio/wav\r\n\r\n"
    "RIFF\r\n--b0 is not a delimiter without its line start\r\n"
    "--b0\r\n"
    "Content-Disposition: form-data; name=\"model\"\r\n\r\n"
    "whisper-1\r\n"
    "--b0\r\n"
    "Content-Disposition: form-data; name=\"stream\"\r\n\r\n"
    "true\r\n"
    "--b0--\r\n";

TEST(Multipart, BoundaryFromTheContentType) {
  EXPECT_EQ(multipartBoundary("multipart/form-data; boundary=b0"), "b0");
  EXPECT_EQ(multipartBoundary("Multipart/Form-Data;boundary=\"a b:c\""), "a b:c");
  EXPECT_EQ(multipartBoundary("multipart/form-data; charset=utf-8; boundary=----x1"), "----x1");
  EXPECT_FALSE(multipartBoundary("application/json"));
  EXPECT_FALSE(multipartBoundary("multipart/form-data"));
  EXPECT_FALSE(multipartBoundary("multipart/form-data; boundary="));
  EXPECT_FALSE(multipartBoundary("multipart/form-data; boundary=\"unterminated"));
  EXPECT_FALSE(multipartBoundary("multipart/form-data; boundary=" + std::string(71, 'x')));
  EXPECT_FALSE(multipartBoundary("multipart/form-data; boundary=a\r\nb"));
}

TEST(Multipart, WalksThePartsAndReadsPlainFields) {
  std::vector<std::string> names;
  std::string fileBytes;
  EXPECT_TRUE(forEachPart(kBody, "b0", [&](const FormPart& p) {
    names.push_back(p.name);
    if (p.filename) fileBytes = std::string(p.data);
    return true;
  }));
  EXPECT_EQ(names, (std::vector<std::string>{"file", "model", "stream"}));
  EXPECT_EQ(fileBytes, "RIFF\r\n--b0 is not a delimiter without its line start");
  EXPECT_EQ(multipartField(kBody, "b0", "model"), "whisper-1");
  EXPECT_EQ(multipartField(kBody, "b0", "stream"), "true");
  EXPECT_FALSE(multipartField(kBody, "b0", "file"));  // a file, not a field
  EXPECT_FALSE(multipartField(kBody, "b0", "absent"));
  EXPECT_FALSE(multipartField(kBody, "b0", "model", 4));  // longer than the bound
}

TEST(Multipart, MalformedBodiesGiveWhatCameBeforeTheFault) {
  EXPECT_FALSE(forEachPart("no delimiter at all", "b0", [](const FormPart&) { return true; }));
  const std::string cut = kBody.substr(0, kBody.find("whisper"));
  EXPECT_FALSE(multipartField(cut, "b0", "model"));
  EXPECT_FALSE(multipartField("--b0\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nx", "b0", "model"));
  // A preamble before the first delimiter is skipped.
  EXPECT_EQ(multipartField("hello\r\n--b0\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--b0--", "b0", "model"),
            "m");
}

}  // namespace
}  // namespace sluice::gateway
