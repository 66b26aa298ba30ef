// The cost tables of the Architecture panel: parameters per component, FLOPs per token and
// memory at a context length, every number from model/theory/cost.h. The one derived column,
// forward FLOPs of a weight matrix = 2 x its parameters (one multiply and one add per weight per
// token), is Kaplan et al.'s convention, the same one flopsPerToken uses for its 2N.
#include "app/gui/panels/architecture/cost_tables.h"

#include <imgui.h>

#include <cstdio>
#include <string>

#include "app/gui/widgets/bar_chart.h"
#include "model/theory/cost.h"
#include "model/theory/slide_tables.h"
#include "app/gui/widgets/plot.h"  // formatCount

namespace tscope::gui {

namespace {

std::string flopsText(double flops) {
  const char* units[] = {"", "K", "M", "G", "T", "P", "E"};
  int unit = 0;
  while (flops >= 1000 && unit < 6) {
    flops /= 1000;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, flops >= 100 ? "%.0f %sFLOP" : "%.3g %sFLOP", flops, units[unit]);
  return text;
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "";
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * part / whole);
  return text;
}

std::string dims(std::initializer_list<int64_t> values) {
  std::string s;
  for (int64_t v : values) s += (s.empty() ? "" : " x ") + std::to_string(v);
  return s;
}

// One table row; empty strings leave a cell blank. A highlighted row gets a tinted background.
void row(const std::string& name, const std::string& shape, const std::string& count, const std::string& share, const std::string& flops,
         bool highlighted = false) {
  ImGui::TableNextRow();
  if (highlighted) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, ImGui::GetColorU32(ImGuiCol_Header, 0.6f));
  for (const std::string* cell : {&name, &shape, &count, &share, &flops}) {
    ImGui::TableNextColumn();
    if (cell == &shape) ImGui::TextDisabled("%s", cell->c_str());
    else ImGui::TextUnformatted(cell->c_str());
  }
}

}  // namespace

void drawParameterTable(const ModelConfig& c, int contextLength) {
  const ParamCounts p = countParameters(c);
  const FlopCounts f = flopsPerToken(c, contextLength);
  const double total = static_cast<double>(p.total);
  const int64_t L = c.n_layer, C = c.n_embd, F = c.dFF(), V = c.vocab_size, E = c.n_experts;
  const int64_t activeMlp = p.activeNonEmbedding - p.attention - p.layerNorm - p.outputHead;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("parameters", 5, flags)) return;
  ImGui::TableSetupColumn("component");
  ImGui::TableSetupColumn("shape");
  ImGui::TableSetupColumn("parameters");
  ImGui::TableSetupColumn("share");
  ImGui::TableSetupColumn("forward FLOPs / token");
  ImGui::TableHeadersRow();
  if (c.isImage()) {  // docs/VISION.md: [CLS] and the projection's bias, then the projection itself
    row("[CLS] and patch bias wte", dims({2, C}), formatCount(p.tokenEmbedding), percent(p.tokenEmbedding, total), "lookup: none");
    row("Patch embedding",
        dims({c.patchDim(), C}) + " (" + std::to_string(c.patch_size) + " x " + std::to_string(c.patch_size) + " x " +
            std::to_string(c.num_channels) + " pixels)",
        formatCount(p.patchEmbedding), percent(p.patchEmbedding, total), flopsText(2.0 * p.patchEmbedding));
  } else {
    row("Token embedding wte", dims({V, C}), formatCount(p.tokenEmbedding), percent(p.tokenEmbedding, total), "lookup: none");
  }
  if (c.hasLearnedPositions())
    row(c.isEncoderDecoder() ? "Position embeddings wpe (encoder, decoder)" : "Position embedding wpe",
        (c.isEncoderDecoder() ? "2 x " : "") + dims({c.n_positions, C}), formatCount(p.positionEmbedding), percent(p.positionEmbedding, total),
        "lookup: none");
  else row("Position embedding", std::string(toString(c.position_encoding)) + ": no weights", "0", "", "");
  if (c.hasTokenTypes())
    row("Token type (segment) embedding wtt", dims({c.type_vocab_size, C}), formatCount(p.tokenTypeEmbedding), percent(p.tokenTypeEmbedding, total),
        "lookup: none");
  // q, k, v (C, H D + 2 Hkv D) and out (H D, C): with head_dim set H D is not C.
  // An encoder-decoder's counts hold both stacks (L + Le layers) and the decoder's cross-attention.
  const int64_t Le = c.n_encoder_layer, layers = L + Le;
  const std::string cross = c.isEncoderDecoder() ? " + cross-attention in " + std::to_string(L) + " decoder layers" : "";
  row("Attention q, k, v, out", dims({layers, C, c.qkvDim()}) + " + " + dims({layers, c.attnDim(), C}) + " + biases" + cross,
      formatCount(p.attention), percent(p.attention, total), flopsText(2.0 * p.attention));
  const std::string width = c.attnDim() == C ? "C" : "H D";
  const std::string attended = (c.slidingWindow() > 0 ? "2 L min(n, w) " : "2 L n ") + width + ", n = ";
  row("Attention scores QK^T, AV", attended + std::to_string(contextLength), "0", "", flopsText(f.attentionForward));
  if (c.isMoe()) {
    row("Experts (all)", dims({layers, E, C, F}) + " x " + (c.activation == Activation::SwiGlu ? "3" : "2"), formatCount(p.mlp - p.router),
        percent(p.mlp - p.router, total), "");
    row("  active: top-" + std::to_string(c.moe_top_k) + " + router", dims({layers, c.moe_top_k}) + " experts", formatCount(activeMlp),
        percent(activeMlp, total), flopsText(2.0 * activeMlp));
    row("  routers", dims({layers, C, E}), formatCount(p.router), percent(p.router, total), "(in active)");
  } else {
    row("MLP", dims({layers, C, F}) + " x " + (c.activation == Activation::SwiGlu ? "3" : "2") + " + biases", formatCount(p.mlp),
        percent(p.mlp, total), flopsText(2.0 * p.mlp));
  }
  // ln_1 and ln_2 per layer (ln_1 only when attention-only), ln_x per decoder layer of an
  // encoder-decoder, and one final norm per stack (pre-norm).
  const int64_t perLayer = c.hasFeedForward() ? 2 : 1;
  const int64_t norms =
      perLayer * (L + Le) + (c.isEncoderDecoder() ? L : 0) + (c.hasFinalNorm() ? (c.isEncoderDecoder() ? 2 : 1) : 0) + (c.embedding_norm ? 1 : 0);
  if (!c.hasNorm() && !c.qk_norm) {
    row("Norms", "none (norm: none)", "0", percent(0, total), "");
  } else {
    const std::string kind = !c.hasNorm() ? "q/k RMSNorm" : c.norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm";
    row(kind + " gains" + (c.hasNormBias() ? ", biases" : ""),
        std::to_string(c.hasNorm() ? norms : 0) + " norms of " + std::to_string(C) +
            (c.qk_norm ? " + " + std::to_string(2 * (L + Le)) + " q/k norms of " + std::to_string(c.headDim()) : std::string()),
        formatCount(p.layerNorm), percent(p.layerNorm, total), flopsText(2.0 * p.layerNorm));
  }
  if (c.mlm_head)
    row("MLM head (BERT)", dims({C, C}) + " + bias, norm, output bias " + std::to_string(V), formatCount(p.outputHead), percent(p.outputHead, total),
        flopsText(2.0 * p.outputHead));
  row(c.isImage() ? "Classifier (class logits)" : "Unembedding (logits)",
      c.tie_word_embeddings ? "tied: shares wte" : dims({C, V}) + (c.isImage() ? " + bias " + std::to_string(V) : ""), formatCount(p.unembedding),
      percent(p.unembedding, total), flopsText(f.unembedForward));
  row("Total", "", formatCount(p.total), "100%", flopsText(f.forward + f.unembedForward) + " (with logits)", true);
  row("  embedding",
      c.isImage()         ? "[CLS] + patch projection + position + classifier"
      : c.hasTokenTypes() ? "token + position + token type (+ untied unembedding)"
                          : "token + position (+ untied unembedding)",
      formatCount(p.embedding), percent(p.embedding, total), "");
  row("  non-embedding N", "Kaplan's N", formatCount(p.nonEmbedding), percent(p.nonEmbedding, total), "");
  if (c.isMoe()) row("  active per token", "only k experts count", formatCount(p.active), percent(p.active, total), "");
  row("One block", "per layer", formatCount(p.perLayer), percent(p.perLayer, total), flopsText(f.forward / c.n_layer) + " (forward / L)");
  if (c.isMoe()) row("One expert", dims({C, F, C}), formatCount(p.perExpert), percent(p.perExpert, total), "");
  if (c.hasSharedExpert())
    row("Shared experts", "all layers, with their gates; active for every token", formatCount(p.sharedExpert), percent(p.sharedExpert, total), "");
  ImGui::EndTable();
  ImGui::TextDisabled("exact total: %lld parameters", static_cast<long long>(p.total));
}

void drawCostBars(const ModelConfig& c, int contextLength, float width) {
  const ParamCounts p = countParameters(c);
  const FlopCounts f = flopsPerToken(c, contextLength);
  const int64_t activeMlp = p.activeNonEmbedding - p.attention - p.layerNorm - p.outputHead;
  const char* mlpName = c.isMoe() ? "experts" : "MLP";
  const float nameWidth = ImGui::CalcTextSize("attention scores ").x;
  auto bar = [&](const char* name, double value, double whole, const std::string& amount) {
    ImGui::TextUnformatted(name);
    ImGui::SameLine(nameWidth);
    const std::string label = percent(value, whole) + "  " + amount;
    drawBar(static_cast<float>(whole > 0 ? value / whole : 0), 1.0f, std::max(width - nameWidth, ImGui::GetFontSize() * 8), BarStyle::Normal,
            label.c_str());
  };
  ImGui::TextUnformatted("Where the parameters are");
  const double total = static_cast<double>(p.total);
  bar("embeddings", p.embedding, total, formatCount(p.embedding));
  bar("attention", p.attention, total, formatCount(p.attention));
  bar(mlpName, p.mlp, total, formatCount(p.mlp));
  bar("norms", p.layerNorm, total, formatCount(p.layerNorm));
  ImGui::Spacing();
  ImGui::Text("Where a token's forward FLOPs go (n = %d)", contextLength);
  const double flops = f.forward + f.unembedForward;
  bar("attention", 2.0 * p.attention, flops, flopsText(2.0 * p.attention));
  bar("attention scores", f.attentionForward, flops, flopsText(f.attentionForward));
  bar(mlpName, 2.0 * activeMlp, flops, flopsText(2.0 * activeMlp));
  bar("logits", f.unembedForward, flops, flopsText(f.unembedForward));
}

void drawFlopsTable(const ModelConfig& c, int contextLength) {
  const ParamCounts p = countParameters(c);
  const FlopCounts f = flopsPerToken(c, contextLength);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("flops", 3, flags)) return;
  ImGui::TableSetupColumn("per token, at context n");
  ImGui::TableSetupColumn("FLOPs");
  ImGui::TableSetupColumn("how");
  ImGui::TableHeadersRow();
  auto line = [](const char* name, double flops, const std::string& how) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(flopsText(flops).c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", how.c_str());
  };
  const std::string attention = c.slidingWindow() > 0 ? "2 L min(n, w) C" : "2 L n C";
  line("Inference (forward)", f.forward, "2N + " + attention + ", N = " + formatCount(p.activeNonEmbedding) + (c.isMoe() ? " active" : ""));
  line("  of which weights", f.matmulForward, "2N (" + percent(f.matmulForward, f.forward) + ")");
  line("  of which attention", f.attentionForward, attention + " (" + percent(f.attentionForward, f.forward) + ")");
  // The lecture counts 2 FLOPs per multiply-add in each of QK^T and AV: 2 x 2 n d per layer.
  line("  attention, the lecture's convention", attentionFlopsLecture(c, contextLength), "2 x 2 n d per layer: twice Kaplan's (tscope's) 2 L n d");
  line("  + logits", f.unembedForward, "2 V C (Kaplan leave it out)");
  line("Training", f.training, "6N + attention = 3 x forward");
  line("Training, checkpointed", f.trainingCheckpointed, "8N + attention = 4 x forward");
  ImGui::EndTable();
}

void drawMemoryTable(const ModelConfig& c, int contextLength) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("memory", 4, flags)) return;
  ImGui::TableSetupColumn("memory, batch 1");
  ImGui::TableSetupColumn("fp32");
  ImGui::TableSetupColumn("16-bit");
  ImGui::TableSetupColumn("how");
  ImGui::TableHeadersRow();
  auto line = [](const std::string& name, double fp32, double half, const std::string& how) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(fp32).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(half).c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", how.c_str());
  };
  const double n = contextLength;
  line("Weights", weightBytes(c, 4), weightBytes(c, 2), "total parameters x bytes");
  line("KV cache per token", kvCacheBytesPerToken(c, 4), kvCacheBytesPerToken(c, 2),
       "2 x L x Hkv x D = 2 x " + std::to_string(c.n_layer) + " x " + std::to_string(c.kvHeads()) + " x " + std::to_string(c.headDim()));
  line("KV cache, n = " + std::to_string(contextLength), kvCacheBytesPerToken(c, 4) * n, kvCacheBytesPerToken(c, 2) * n, "grows with n");
  line("Attention maps, n = " + std::to_string(contextLength), attentionMapBytes(c, contextLength, 4), attentionMapBytes(c, contextLength, 2),
       "L x H x n x n: grows with n^2");
  // An image as tokens (ViT): 224 / 16 = 14 patches a side, or every pixel a token.
  for (const auto& [patch, what] : {std::pair{16, "224^2 image, 16x16 patches"}, std::pair{1, "224^2 pixels as tokens"}}) {
    const int n = imagePatchTokens(224, patch);
    line(std::string("Attention maps, ") + what + " (n = " + std::to_string(n) + ")", attentionMapBytes(c, n, 4), attentionMapBytes(c, n, 2),
         patch == 1 ? "the lecture's \"50k sequence length, too much!\"" : "ViT's 196 patch tokens");
  }
  ImGui::EndTable();
}

}  // namespace tscope::gui
