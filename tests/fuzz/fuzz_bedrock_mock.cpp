// The mock's Bedrock side (mock/BedrockMock.hpp): the Converse request parser and the SigV4
// verifier, on hostile input. Input: [mode] + bytes. Mode even: the bytes are a Converse body;
// a request it accepts must render as a JSON answer and as an event stream whose every frame
// decodes with its CRCs. Mode odd: the bytes are "target\nauthorization\nx-amz-date\nbody" of a
// signed request; a request signed with the mock's own key for those bytes must verify, and the
// fuzzer's own Authorization must never crash the verifier nor verify without the key.
#include <boost/json.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "cloud/EventStream.hpp"
#include "cloud/SigV4.hpp"
#include "core/JsonText.hpp"
#include "mock/BedrockMock.hpp"

using namespace sluice;

namespace {

std::string_view line(std::string_view& rest) {
  const auto nl = rest.find('\n');
  std::string_view l = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return l;
}

void converse(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value v = sluice::parseJson(body, ec);
  if (ec) return;
  mock::bedrock::ConverseRequest req;
  if (mock::bedrock::parseConverseRequest(v, "anthropic.claude-3-haiku", req)) return;
  mock::Generation gen = mock::planAnswer(req.tools, 3, req.max_tokens, req.stop, 1);
  boost::json::value answer = sluice::parseJson(mock::bedrock::converseJson(req, gen), ec);
  if (ec || !answer.is_object()) fuzz::fail("the Converse answer is not a JSON object");
  cloud::EventStreamDecoder d;
  std::vector<cloud::EventStreamMessage> frames;
  if (!d.feed(mock::bedrock::converseStream(req, gen).all(), frames) || !d.idle())
    fuzz::fail("the ConverseStream answer does not decode", d.error());
  if (frames.empty() || frames.back().header(":event-type") != "metadata") fuzz::fail("the stream does not end in metadata");
}

void signature(std::string_view rest) {
  namespace bhttp = boost::beast::http;
  const std::string_view target = line(rest), auth = line(rest), date = line(rest), body = rest;
  if (target.empty() || target.front() != '/' || target.find_first_of(" \r\n\t") != std::string_view::npos) return;
  const auto fieldOk = [](std::string_view v) {
    for (char c : v)
      if (c == '\r' || c == '\n' || c == '\0') return false;
    return true;
  };
  if (!fieldOk(auth) || !fieldOk(date)) return;
  const auto keys = std::vector<cloud::AwsCredentials>{*cloud::parseAwsKey(mock::bedrock::kDefaultAwsKey)};
  http::Request req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "bedrock-runtime.us-east-1.amazonaws.com");
  req.set("x-amz-date", date);
  req.set(bhttp::field::authorization, auth);
  req.body() = body;
  const long long now = 1700000000;
  // The fuzzer's own Authorization: never a crash; it verifies only by finding the HMAC.
  (void)mock::bedrock::verifySignature(req, keys, now);
  // Signed properly for these bytes: it must verify.
  const std::string amz = cloud::amzDate(now);
  const auto q = target.find('?');
  cloud::SigV4Request sr;
  sr.method = "POST";
  sr.path = target.substr(0, q);
  sr.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  sr.headers = {{"host", "bedrock-runtime.us-east-1.amazonaws.com"}, {"x-amz-date", amz}};
  const std::string payload = cloud::sha256Hex(body);
  sr.payload_sha256_hex = payload;
  const auto sig = cloud::signV4(sr, keys[0], {"us-east-1", "bedrock", amz});
  req.set("x-amz-date", amz);
  req.set(bhttp::field::authorization, sig.authorization);
  if (auto e = mock::bedrock::verifySignature(req, keys, now)) fuzz::fail("a correct signature was refused", e->message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0)
    converse(rest);
  else
    signature(rest);
  return 0;
}
