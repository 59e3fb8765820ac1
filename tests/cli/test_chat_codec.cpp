// The real model's TextCodec: the ChatML template applied turn by turn must give exactly the
// tokens of the whole conversation rendered at once (what llama.cpp feeds the model), or a chat
// would drift away from the format the model was trained on.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mini_engine/model/chat_template.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/tokenizer.h"
#include "model_path.h"
#include "test_util.h"
#include "text.h"

using namespace speclab;
using namespace speclab::cli;

TEST_SUITE("cli / chat codec") {
  TEST_CASE("turn by turn gives the tokens of the whole conversation rendered at once") {
    const auto path = testing::find_smollm2();
    if (!path) testing::skip("SmolLM2 is not cached (tools/fetch_model)");
    const GgufFile file = GgufFile::open(*path);
    const auto codec = make_gguf_codec(file);
    const Tokenizer tok = Tokenizer::from_gguf(file);

    const std::string user1 = "Rename x to count:\ndef f(x):\n    return x + 1";
    const std::string reply1 = "def f(count):\n    return count + 1";
    const std::string user2 = "Now add a docstring.";
    const Token im_end = *tok.find("<|im_end|>");
    // With the template's default system prompt, and with our own.
    for (const std::string& system : {std::string(), std::string("You are terse.")}) {
      CAPTURE(system);
      std::vector<ChatMessage> messages;
      if (!system.empty()) messages.push_back({"system", system});
      messages.push_back({"user", user1});
      std::vector<Token> grown = codec->system_prompt(system);
      const std::vector<Token> turn1 = codec->user_turn(user1);
      grown.insert(grown.end(), turn1.begin(), turn1.end());
      CHECK(grown == render_chat(tok, messages, true));

      // The model's reply, ended by its stop token, then turn 2.
      const std::vector<Token> reply = codec->encode(reply1);
      grown.insert(grown.end(), reply.begin(), reply.end());
      grown.push_back(im_end);
      const std::vector<Token> close = codec->close_reply(true);
      grown.insert(grown.end(), close.begin(), close.end());
      const std::vector<Token> turn2 = codec->user_turn(user2);
      grown.insert(grown.end(), turn2.begin(), turn2.end());
      messages.push_back({"assistant", reply1});
      messages.push_back({"user", user2});
      CHECK(grown == render_chat(tok, messages, true));
    }
  }

  TEST_CASE("end-of-turn text typed by the user stays text") {
    const auto path = testing::find_smollm2();
    if (!path) testing::skip("SmolLM2 is not cached (tools/fetch_model)");
    const GgufFile file = GgufFile::open(*path);
    const auto codec = make_gguf_codec(file);
    const Token im_end = *Tokenizer::from_gguf(file).find("<|im_end|>");
    const std::vector<Token> turn = codec->user_turn("a <|im_end|> b");
    CHECK(std::count(turn.begin(), turn.end(), im_end) == 1);  // only the one that closes it
  }

  TEST_CASE("a reply cut at max-new-tokens is closed with the end-of-turn token") {
    const auto path = testing::find_smollm2();
    if (!path) testing::skip("SmolLM2 is not cached (tools/fetch_model)");
    const GgufFile file = GgufFile::open(*path);
    const auto codec = make_gguf_codec(file);
    const Tokenizer tok = Tokenizer::from_gguf(file);
    const Token im_end = *tok.find("<|im_end|>");
    CHECK(codec->close_reply(false).front() == im_end);
    CHECK(codec->close_reply(true) == tok.encode("\n", false));
    CHECK(codec->decode(codec->close_reply(false)) == "\n");  // control tokens are not shown
  }
}
