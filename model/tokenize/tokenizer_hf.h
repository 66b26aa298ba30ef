// Internal: what tokenizer_json.cpp reads out of a tokenizer.json (HfTokenizerSpec), and the
// tokenizer built from it (tokenizer_hf.cpp). The spec is plain data, checked by the loader.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/tokenize/bpe_core.h"
#include "model/tokenize/pretokenize.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

struct HfAddedToken {
  std::string content;  // matched in the raw text before any normalization
  int id = -1;
  bool special = false;
  bool lstrip = false;  // swallows the white space on its left
  bool rstrip = false;  // swallows the white space on its right
  // Matched in the normalized text rather than the raw one (tokenizer.json's "normalized"; by
  // default true for a token that is not special). Only the WordPiece tokenizer reads it: the BPE
  // tokenizer matches every added token in the raw text.
  bool normalized = false;
};

struct HfNormalizerStep {
  enum class Kind { Prepend, Replace, Nfc } kind;
  std::string from, to;  // Replace: every `from` becomes `to`; Prepend: `to` goes in front
};

enum class MetaspacePrepend { Always, First, Never };

struct HfTokenizerSpec {
  std::string name;                    // the file, for messages
  std::vector<std::string> pieceOfId;  // (V) the token strings as the file spells them
  bpe::MergeTable merges;              // on ids
  std::vector<HfAddedToken> addedTokens;
  std::vector<HfNormalizerStep> normalizer;
  // Pre-tokenizer: byte-level (optionally split by a known regex first), or Metaspace, or none.
  bool byteLevel = false;             // pieces spell bytes in GPT-2's byte alphabet
  bool addPrefixSpace = false;        // ByteLevel's add_prefix_space
  std::optional<SplitPattern> split;  // the regex split before byte-level mapping
  bool metaspace = false;
  std::string metaspaceReplacement = "\xE2\x96\x81";  // U+2581
  MetaspacePrepend metaspacePrepend = MetaspacePrepend::Always;
  bool metaspaceSplit = false;
  // Model options.
  int unkId = -1;
  bool fuseUnk = false;
  bool byteFallback = false;  // unknown characters become <0xNN> tokens
  bool ignoreMerges = false;  // a word that is a whole token is taken as is
  // Decoder (SentencePiece style; byte-level decoding follows from byteLevel).
  std::vector<std::pair<std::string, std::string>> decodeReplace;  // in order
  bool decodeByteFallback = false;                                 // <0xNN> decodes to the byte
  int decodeStripLeadingSpaces = 0;                                // Strip decoder: leading spaces removed from the text
  int bosId = -1;                                                  // the post_processor's first special token, or -1
};

std::unique_ptr<Tokenizer> makeHfBpeTokenizer(HfTokenizerSpec spec);

}  // namespace tscope
