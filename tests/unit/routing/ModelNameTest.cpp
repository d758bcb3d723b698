#include "routing/ModelName.hpp"

#include <gtest/gtest.h>

#include "routing/Router.hpp"

namespace sluice::routing {
namespace {
namespace model_name_test {

TEST(ModelName, AcceptsRealModelNames) {
  for (const char* name :
       {"gpt-4o-mini", "gpt-4o-2024-08-06", "ft:gpt-4o-mini:org::id", "claude-sonnet-4-5",
        "anthropic.claude-3-5-sonnet-20240620-v1:0", "meta-llama/Llama-3.1-8B-Instruct", "models/gemini-2.5-flash",
        "gemini-2.5-flash", "openai/gpt-4o-mini", "llama3.1:8b", "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q8_0",
        "accounts/fireworks/models/llama-v3p1-8b", "qwen2.5-7b-instruct@q4_k_m", "x..y", "...", "a/.../b"})
    EXPECT_FALSE(modelNameProblem(name).has_value()) << name << ": " << modelNameProblem(name).value_or("");
  EXPECT_TRUE(isModelName(std::string(kMaxModelNameBytes, 'a')));
}

TEST(ModelName, RefusesWhatWouldWalkOrCutAUrl) {
  for (std::string_view name :
       {"",          ".",        "..",           "../../admin", "a/../../x",  "models/../../v1/files",
        "x/./y",     "/x",       "x/",           "x//y",        "x?key=evil", "x#frag",
        "%2e%2e%2f", "x%00",     "x\\..\\admin", "x y",         "x\ty",       "x\r\nHost: evil",
        "x\x7f",     "x\xc3\xa9"})
    EXPECT_TRUE(modelNameProblem(name).has_value()) << printableModelName(name);
  EXPECT_TRUE(modelNameProblem(std::string_view("x\0y", 3)).has_value());
  EXPECT_FALSE(isModelName(std::string(kMaxModelNameBytes + 1, 'a')));
}

TEST(ModelName, ProblemsSayWhatIsWrong) {
  EXPECT_EQ(modelNameProblem("").value(), "is empty");
  EXPECT_EQ(modelNameProblem("a/../b").value(), "has a '..' path segment");
  EXPECT_EQ(modelNameProblem("x?y").value(), "holds '?' (byte 1)");
  EXPECT_EQ(modelNameProblem("x\ny").value(), "holds a control character 0x0A (byte 1)");
  EXPECT_EQ(modelNameProblem("a b").value(), "holds a space (byte 1)");
  const std::string msg = modelNameError("x\r\nHost: evil", *modelNameProblem("x\r\nHost: evil"));
  EXPECT_NE(msg.find("\"model\" \"x\\x0D\\x0AHost: evil\""), std::string::npos) << msg;
}

TEST(ModelName, PrintableFormIsShortAndEscaped) {
  EXPECT_EQ(printableModelName(std::string_view("a\0b", 3)), "a\\x00b");
  const std::string shown = printableModelName(std::string(10 * 1024, 'x'));
  EXPECT_EQ(shown, std::string(64, 'x') + "... (10240 bytes)");
}

TEST(ModelName, GlobsOnlyMatchValidNames) {
  Channel ch;
  ch.cfg.models = {"gemini-*", "exact name"};
  EXPECT_TRUE(ch.servesModel("gemini-2.5-flash"));
  EXPECT_TRUE(ch.servesModel("gemini-a/b"));  // valid; a gemini channel refuses the '/' later
  EXPECT_FALSE(ch.servesModel("gemini-x/../../admin"));
  EXPECT_FALSE(ch.servesModel("gemini-x?key=evil"));
  EXPECT_FALSE(ch.servesModel("gemini-x y"));
  EXPECT_FALSE(ch.servesModel(std::string_view("gemini-\0", 8)));
  EXPECT_TRUE(ch.servesModel("exact name"));  // configured exactly: the operator's choice
}

}  // namespace model_name_test
}  // namespace
}  // namespace sluice::routing
