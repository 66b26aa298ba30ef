// Unicode NFC (canonical decomposition, canonical ordering, canonical composition) for the NFC
// normalizer of tokenizer.json files (Qwen2/3), and NFD (the first two steps) for BERT's
// strip_accents (wordpiece_text.h), over the tables of scripts/gen_nfc_tables.py.
#pragma once
#include <string>
#include <string_view>

namespace tscope {

// The NFC form of UTF-8 text; bytes that are not valid UTF-8 are kept as they are and block
// composition across them. ASCII-only text is returned unchanged without any table lookup.
std::string toNfc(std::string_view text);
// The NFD form (full canonical decomposition in canonical order); invalid bytes kept as they are.
std::string toNfd(std::string_view text);
const char* nfcUnicodeVersion();

}  // namespace tscope
