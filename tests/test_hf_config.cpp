// The HuggingFace config.json mapping (model/io/hf_checkpoint.h): every field of a Llama / Mistral /
// Qwen / Mixtral config read into a ModelConfig, Llama 3's RoPE scaling, and one clear line for every
// configuration tscope cannot run.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "model/io/hf_checkpoint.h"
#include "model/io/model_io.h"
#include "tests/hf_tiny_model.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;
using json = nlohmann::json;

TEST(HfCheckpoint, ConfigMapsEveryField) {
  json j = tinyConfig();
  j["rms_norm_eps"] = 1e-6;
  j["rope_theta"] = 500000.0;
  j["max_position_embeddings"] = 131072;
  j["num_key_value_heads"] = 1;
  j["sliding_window"] = nullptr;
  j["rope_scaling"] = nullptr;
  const ModelConfig c = hfLlamaConfig(j);
  EXPECT_EQ(c.n_embd, 16);
  EXPECT_EQ(c.d_ff, 24);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.kvHeads(), 1);
  EXPECT_EQ(c.vocab_size, 32);
  EXPECT_EQ(c.layer_norm_epsilon, 1e-6);
  EXPECT_EQ(c.position_base, 500000.0);
  EXPECT_EQ(c.n_positions, kHfContextCap);
  EXPECT_EQ(c.position_encoding, PositionEncoding::Rope);
  EXPECT_EQ(c.norm, NormKind::RmsNorm);
  EXPECT_EQ(c.activation, Activation::SwiGlu);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.attention_window, 0);
  EXPECT_TRUE(isHfLlamaFamily(j));
  j["sliding_window"] = 8;  // LlamaForCausalLM ignores it (as HF does); Mistral uses it on every layer
  EXPECT_EQ(hfLlamaConfig(j).attention_window, 0);
  j["architectures"] = {"MistralForCausalLM"};
  EXPECT_EQ(hfLlamaConfig(j).attention_window, 8);
  EXPECT_FALSE(isHfLlamaFamily(json{{"architectures", {"GPT2LMHeadModel"}}}));
  EXPECT_TRUE(isHfLlamaFamily(json{{"model_type", "mistral"}}));
  EXPECT_FALSE(hfLlamaConfig(j).qk_norm);
  // Qwen3: q/k norm on; head_dim is accepted when it is hidden_size / num_attention_heads; the
  // sliding window follows Qwen2's use_sliding_window / max_window_layers.
  json qwen3 = tinyConfig();
  qwen3["architectures"] = {"Qwen3ForCausalLM"};
  qwen3["model_type"] = "qwen3";
  qwen3["head_dim"] = 4;
  qwen3["sliding_window"] = 8;
  EXPECT_TRUE(isHfLlamaFamily(qwen3));
  EXPECT_TRUE(isHfLlamaFamily(json{{"model_type", "qwen3"}}));
  EXPECT_EQ(unsupportedHfArchitecture(qwen3), "");
  ModelConfig q3 = hfLlamaConfig(qwen3);
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.headDim(), 4);
  EXPECT_EQ(q3.attention_window, 0);  // no use_sliding_window
  qwen3["use_sliding_window"] = true;
  qwen3["max_window_layers"] = 0;
  EXPECT_EQ(hfLlamaConfig(qwen3).attention_window, 8);
  qwen3.erase("architectures");  // model_type alone
  EXPECT_TRUE(hfLlamaConfig(qwen3).qk_norm);
  // Qwen3-0.6B's kind: head_dim 128 over 1024 / 16 = 64. Heads of 8 over hidden 16 / 4 make the
  // attention 32 wide: q 32 and k, v 2 x 8 columns of c_attn, c_proj (32, 16).
  qwen3["head_dim"] = 8;
  const ModelConfig wide = hfLlamaConfig(qwen3);
  EXPECT_EQ(wide.head_dim, 8);
  EXPECT_EQ(wide.headDim(), 8);
  EXPECT_EQ(wide.attnDim(), 32);
  EXPECT_EQ(wide.qkvDim(), 32 + 2 * 2 * 8);
  EXPECT_EQ(configFromJson(configToJson(wide)).attnDim(), 32);  // tscope's own config.json keeps it
  qwen3["head_dim"] = 4;                                        // the default width is not recorded
  EXPECT_EQ(hfLlamaConfig(qwen3).head_dim, 0);
  qwen3["head_dim"] = nullptr;
  EXPECT_EQ(hfLlamaConfig(qwen3).headDim(), 4);
  qwen3["head_dim"] = 0;
  expectMentions(errorMessage([&] { hfLlamaConfig(qwen3); }), {"head_dim must be positive"});
  qwen3["head_dim"] = 5;  // odd: RoPE rotates pairs
  expectMentions(errorMessage([&] { hfLlamaConfig(qwen3); }), {"head_dim", "even"});
  qwen3["head_dim"] = 8;
  qwen3["hidden_size"] = 18;  // not a multiple of the heads: fine when head_dim says the width
  EXPECT_EQ(hfLlamaConfig(qwen3).attnDim(), 32);
  qwen3.erase("head_dim");
  expectMentions(errorMessage([&] { hfLlamaConfig(qwen3); }), {"hidden_size 18", "no head_dim"});
  // Qwen2-MoE (Qwen1.5-MoE-A2.7B's fields): the experts' width is moe_intermediate_size, not
  // intermediate_size; norm_topk_prob defaults to false; dense layers are refused.
  json qwenMoe = tinyConfig();
  qwenMoe["architectures"] = {"Qwen2MoeForCausalLM"};
  qwenMoe["model_type"] = "qwen2_moe";
  qwenMoe["intermediate_size"] = 88;
  qwenMoe["moe_intermediate_size"] = 12;
  qwenMoe["shared_expert_intermediate_size"] = 48;
  qwenMoe["num_experts"] = 6;
  qwenMoe["num_experts_per_tok"] = 4;
  qwenMoe["decoder_sparse_step"] = 1;
  qwenMoe["mlp_only_layers"] = json::array();
  qwenMoe["router_aux_loss_coef"] = 0.001;
  qwenMoe["sliding_window"] = 8;
  EXPECT_TRUE(isHfLlamaFamily(qwenMoe));
  EXPECT_TRUE(isHfLlamaFamily(json{{"model_type", "qwen2_moe"}}));
  EXPECT_EQ(unsupportedHfArchitecture(qwenMoe), "");
  const ModelConfig qm = hfLlamaConfig(qwenMoe);
  EXPECT_EQ(qm.n_experts, 6);
  EXPECT_EQ(qm.moe_top_k, 4);
  EXPECT_EQ(qm.d_ff, 12);
  EXPECT_EQ(qm.moe_shared_expert_d_ff, 48);
  EXPECT_FALSE(qm.moe_normalize_top_k);
  EXPECT_LE(qm.moe_capacity_factor, 0.0);
  EXPECT_EQ(qm.moe_routing, MoeRoutingKind::TokenChoice);
  EXPECT_EQ(qm.moe_aux_loss_alpha, 0.001);
  EXPECT_EQ(qm.attention_window, 0);  // Qwen2's use_sliding_window rule
  EXPECT_FALSE(qm.qk_norm);
  qwenMoe["norm_topk_prob"] = true;
  EXPECT_TRUE(hfLlamaConfig(qwenMoe).moe_normalize_top_k);
  qwenMoe["decoder_sparse_step"] = 2;
  expectMentions(errorMessage([&] { hfLlamaConfig(qwenMoe); }), {"decoder_sparse_step 2", "not supported yet", "every layer sparse"});
  qwenMoe["decoder_sparse_step"] = 1;
  qwenMoe["mlp_only_layers"] = {0};
  expectMentions(errorMessage([&] { hfLlamaConfig(qwenMoe); }), {"1 mlp_only_layers", "not supported yet"});
  qwenMoe["mlp_only_layers"] = json::array();
  qwenMoe.erase("shared_expert_intermediate_size");
  expectMentions(errorMessage([&] { hfLlamaConfig(qwenMoe); }), {"shared_expert_intermediate_size"});
}

TEST(HfCheckpoint, ConfigMapsLlama3RopeScaling) {
  // Llama 3.1 / 3.2's rope_scaling; older configs say "type" instead of "rope_type".
  json j = tinyConfig();
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  ModelConfig c = hfLlamaConfig(j);
  EXPECT_EQ(c.rope_scaling_factor, 32.0);
  EXPECT_EQ(c.rope_low_freq_factor, 1.0);
  EXPECT_EQ(c.rope_high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_original_context, 8192);
  EXPECT_EQ(c.position_base, 500000.0);
  j["rope_scaling"].erase("rope_type");
  j["rope_scaling"]["type"] = "llama3";
  j["rope_scaling"]["factor"] = 8.0;
  EXPECT_EQ(hfLlamaConfig(j).rope_scaling_factor, 8.0);
  // "default" scaling is none; a missing or bad field is one line naming it.
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_FALSE(hfLlamaConfig(j).hasRopeScaling());
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expectMentions(errorMessage([&] { hfLlamaConfig(j); }), {"rope_scaling", "low_freq_factor"});
  j["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}};
  expectMentions(errorMessage([&] { hfLlamaConfig(j); }), {"rope_high_freq_factor", "rope_low_freq_factor"});
  j["rope_scaling"]["factor"] = 0.0;
  expectMentions(errorMessage([&] { hfLlamaConfig(j); }), {"rope_scaling", "factor must be > 0"});
}

TEST(HfCheckpoint, UnsupportedConfigsAreOneLine) {
  ScratchDir dir("tscope_hf_bad");
  for (const char* arch : {"Gemma2ForCausalLM", "Phi3ForCausalLM"}) {
    json j = tinyConfig();
    j["architectures"] = {arch};
    writeTinyModel(dir.path() / arch, j);
    expectMentions(loadError(dir.path() / arch), {arch, "not supported yet", "config.json"});
  }
  const std::pair<const char*, json> fields[] = {{"rope_scaling", json{{"rope_type", "yarn"}, {"factor", 4.0}}}, {"hidden_act", "gelu"}};
  for (const auto& [field, value] : fields) {
    json j = tinyConfig();
    j[field] = value;
    writeTinyModel(dir.path() / field, j);
    expectMentions(loadError(dir.path() / field), {field, "not supported yet", "config.json"});
  }
  // head_dim 8 while the tensors are hidden_size / heads = 4 wide: the first one that disagrees, in one line.
  json wideHeads = tinyConfig();
  wideHeads["head_dim"] = 8;
  writeTinyModel(dir.path() / "head_dim", wideHeads);
  expectMentions(loadError(dir.path() / "head_dim"), {"q_proj.weight", "[16, 16]", "[32, 16]", "model.safetensors"});
  json mixtral = tinyConfig();
  mixtral["architectures"] = {"MixtralForCausalLM"};
  mixtral["num_experts_per_tok"] = 2;
  expectMentions(errorMessage([&] { hfLlamaConfig(mixtral); }), {"num_local_experts"});
  mixtral["num_local_experts"] = 1;
  expectMentions(errorMessage([&] { hfLlamaConfig(mixtral); }), {"moe_top_k"});
  json qwen = tinyConfig();
  qwen["architectures"] = {"Qwen2ForCausalLM"};
  qwen["use_sliding_window"] = true;
  qwen["sliding_window"] = 4;
  qwen["max_window_layers"] = 1;
  EXPECT_THROW(hfLlamaConfig(qwen), Error);
  expectMentions(errorMessage([&] { hfLlamaConfig(qwen); }), {"max_window_layers", "not supported yet"});
  qwen["max_window_layers"] = 0;
  EXPECT_EQ(hfLlamaConfig(qwen).attention_window, 4);
}
